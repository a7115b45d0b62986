// `node run` and the node's IPv6 address: --ip6 / IP6 (and IP6_AUTODETECTION_METHOD) as
// calico/node names them; a bad address or a failed autodetection exits non-zero naming the
// field, before the health port or the control socket are up.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeRunRefused } from '../../support/daemon.js';
import { nodeRunConfig } from '../../../lib/cli/node-config.js';

describe('dual stack: node run --ip6 / IP6', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'podroute-node-ip6-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const refused = (flags: string[], message: RegExp) => nodeRunRefused(dir, ['--ip', '10.0.0.1/24', ...flags], message);

  it('the environment names of calico/node, flags over them', () => {
    const env = { IP6: 'fd00::5/64', IP6_AUTODETECTION_METHOD: 'interface=eth1' };
    const c = nodeRunConfig([], env);
    assert.deepEqual([c.ipv6Address, c.ip6AutodetectionMethod], ['fd00::5/64', 'interface=eth1']);
    assert.equal(nodeRunConfig(['--ip6', 'autodetect'], env).ipv6Address, 'autodetect');
    assert.equal(nodeRunConfig([], { PODROUTE_IP6: 'fd00::6/64', IP6: 'fd00::5/64' }).ipv6Address, 'fd00::6/64');
  });

  it('an IPv4 address as --ip6', async () => {
    await refused(['--ip6', '10.0.0.1/24'], /ipv6Address: "10\.0\.0\.1\/24" is not an IPv6 address/);
  });

  it('an IPv6 address without its prefix length', async () => {
    await refused(['--ip6', 'fd00::1'], /ipv6Address: "fd00::1" is not an address with a prefix length \(e\.g\. fd00::1\/64\)/);
  });

  it('autodetect that finds nothing', async () => {
    await refused(
      ['--ip6', 'autodetect', '--ip6-autodetection-method', 'interface=podroute-none0'],
      /ip6AutodetectionMethod interface=podroute-none0: no interface with an IPv6 address matched/,
    );
  });
});
