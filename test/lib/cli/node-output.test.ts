// What `podroute node status` prints for a person: the peers, and the Services the agent refuses
// to program, which an operator must see without reading the logs.
import assert from 'node:assert/strict';
import type { AgentStatus } from '../../../lib/agent/index.js';
import { formatNodeStatus } from '../../../lib/cli/node-output.js';

const STATUS: AgentStatus = {
  node: 'n1',
  address: '10.0.0.1',
  asn: 64512,
  routerId: '10.0.0.1',
  ready: true,
  restarting: false,
  peers: [],
  advertised: { blocks: [], borrowed: [], services: [], serviceAddresses: [] },
  routes: { learned: 0, programmed: 0, failures: 0 },
};

describe('node status output', () => {
  it('lists the refused Services with the field and why; says nothing of them when none is', () => {
    const refused = formatNodeStatus({
      ...STATUS,
      services: {
        programmed: 3,
        failures: 1,
        refused: [{ service: 'shop/google', field: 'spec.clusterIP', reason: '8.8.8.8 is outside the service cluster IP range' }],
      },
    });
    assert.match(refused, /Services refused \(not programmed\)\n/);
    assert.match(refused, /\| shop\/google \| spec\.clusterIP \| 8\.8\.8\.8 is outside the service cluster IP range \|/);
    const fine = formatNodeStatus({ ...STATUS, services: { programmed: 3, failures: 0, refused: [] } });
    assert.doesNotMatch(fine, /Services refused/);
    assert.match(fine, /No IPv4 peers found/);
  });

  it('lists the routes not programmed with why, and says nothing of them when all are', () => {
    const out = formatNodeStatus({
      ...STATUS,
      routes: {
        learned: 2,
        programmed: 1,
        failures: 1,
        notProgrammed: [{ dst: '10.66.0.0/26', reason: 'no route to next hop 10.90.255.1' }],
      },
    });
    assert.match(out, /Routes not programmed \(1\)\n/);
    assert.match(out, /\| 10\.66\.0\.0\/26 \| no route to next hop 10\.90\.255\.1 \|/);
    assert.doesNotMatch(formatNodeStatus(STATUS), /Routes not programmed/);
  });
});
