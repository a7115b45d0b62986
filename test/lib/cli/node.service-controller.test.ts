// `podroute node run --service-controller on|off`: the agent writes cluster IPs, NodePorts and
// EndpointSlices unless told not to; anything but on or off is refused before the agent starts.
import assert from 'node:assert/strict';
import { checkNodeRunConfig, nodeRunConfig } from '../../../lib/cli/node-config.js';

describe('services: podroute node run --service-controller', () => {
  it('reads on and off, and refuses anything else naming the setting', () => {
    assert.equal(nodeRunConfig(['--name', 'n1', '--service-controller', 'off'], {}).serviceController, 'off');
    assert.equal(nodeRunConfig(['--name', 'n1'], {}).serviceController, undefined);
    checkNodeRunConfig(nodeRunConfig(['--name', 'n1', '--service-controller', 'on'], {}));
    assert.throws(
      () => checkNodeRunConfig(nodeRunConfig(['--name', 'n1', '--service-controller', 'maybe'], {})),
      /serviceController: "maybe" must be on or off/,
    );
  });
});
