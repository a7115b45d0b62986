// The status document (`podroute node status`, the metrics, the readiness probe): desired
// sessions joined with the speaker's view of each, the node's AS and role, route counts.
import assert from 'node:assert/strict';
import type { PeerStatus } from '../../../bgp/index.js';
import type { DesiredPeer } from '../../../lib/agent/peers.js';
import { agentStatus, peerStatusRows, type StatusFacts } from '../../../lib/agent/status.js';
import { API_VERSION, type Node } from '../../../lib/resources/index.js';

const desired = (address: string, type: DesiredPeer['type'] = 'mesh'): DesiredPeer => ({
  address,
  asn: 64512,
  type,
  source: `Node/${address}`,
  routeReflectorClient: false,
});
const session = (address: string, state: string, lastError = '', extra: Partial<PeerStatus> = {}): PeerStatus => ({
  address,
  asn: 64512,
  type: 'ibgp',
  state,
  since: 1_700_000_000_000,
  families: ['ipv4-unicast'],
  prefixesReceived: 0,
  prefixesSent: 0,
  messagesIn: 0,
  messagesOut: 0,
  outputBuffered: 0,
  lastError,
  dynamic: false,
  ...extra,
});

describe('agent status', () => {
  it('one row per desired peer: Established, a state with its last error, or Idle when the speaker does not know it yet', () => {
    const rows = peerStatusRows(
      [desired('10.0.0.2'), desired('10.0.0.3'), desired('10.0.0.4', 'global')],
      [
        session('10.0.0.2', 'Established', '', { prefixesReceived: 3, prefixesSent: 1 }),
        session('10.0.0.3', 'Active', 'connect ECONNREFUSED 10.0.0.3:179'),
        session('10.0.0.9', 'Established'),
      ],
    );
    assert.deepEqual(rows, [
      {
        address: '10.0.0.2',
        asn: 64512,
        type: 'mesh',
        source: 'Node/10.0.0.2',
        state: 'Established',
        since: 1_700_000_000_000,
        info: 'Established',
        prefixesReceived: 3,
        prefixesSent: 1,
      },
      {
        address: '10.0.0.3',
        asn: 64512,
        type: 'mesh',
        source: 'Node/10.0.0.3',
        state: 'Active',
        since: 1_700_000_000_000,
        info: 'Active connect ECONNREFUSED 10.0.0.3:179',
        prefixesReceived: 0,
        prefixesSent: 0,
      },
      {
        address: '10.0.0.4',
        asn: 64512,
        type: 'global',
        source: 'Node/10.0.0.4',
        state: 'Idle',
        since: 0,
        info: 'Idle',
        prefixesReceived: 0,
        prefixesSent: 0,
      },
    ]);
  });

  it('the AS and cluster ID come from the Node (64512 before it is known); programmed is desired minus failed', () => {
    const facts: StatusFacts = {
      nodeName: 'n1',
      address: '10.0.0.1/24',
      self: undefined,
      config: undefined,
      routerId: '',
      ready: false,
      restarting: true,
      peers: [],
      advertised: { blocks: ['10.70.0.0/26'], borrowed: [], services: [], serviceAddresses: [] },
      learned: 4,
      desiredRoutes: 7,
      failures: 2,
    };
    assert.deepEqual(agentStatus(facts), {
      node: 'n1',
      address: '10.0.0.1/24',
      asn: 64512,
      routerId: '',
      clusterId: undefined,
      ready: false,
      restarting: true,
      peers: [],
      advertised: { blocks: ['10.70.0.0/26'], borrowed: [], services: [], serviceAddresses: [] },
      routes: { learned: 4, programmed: 5, failures: 2 },
    });
    const self: Node = {
      apiVersion: API_VERSION,
      kind: 'Node',
      metadata: { name: 'n1' },
      spec: { bgp: { ipv4Address: '10.0.0.1/24', routeReflectorClusterID: '1.0.0.1' } },
    };
    const config = { apiVersion: API_VERSION, kind: 'BGPConfiguration' as const, metadata: { name: 'default' }, spec: { asNumber: 65000 } };
    const s = agentStatus({ ...facts, self, config, routerId: '10.0.0.1' });
    assert.deepEqual([s.asn, s.clusterId, s.routerId], [65000, '1.0.0.1', '10.0.0.1']);
  });

  it('a learned route with no usable next hop is a failure, listed with why beside the failed writes', () => {
    const s = agentStatus({
      nodeName: 'n1',
      address: '10.0.0.1/24',
      self: undefined,
      config: undefined,
      routerId: '',
      ready: true,
      restarting: false,
      peers: [],
      advertised: { blocks: [], borrowed: [], services: [], serviceAddresses: [] },
      learned: 3,
      desiredRoutes: 2,
      failures: 1,
      unresolved: new Map([
        ['10.66.0.0/26', "10.66.0.0/26: no route to next hop 10.90.255.1 in this node's routing table; next hop skipped"],
      ]),
      failed: new Map([['10.67.0.0/26', { error: 'ENODEV: no such device' }]]),
    });
    assert.deepEqual(s.routes, {
      learned: 3,
      programmed: 1,
      failures: 2,
      notProgrammed: [
        { dst: '10.66.0.0/26', reason: "10.66.0.0/26: no route to next hop 10.90.255.1 in this node's routing table; next hop skipped" },
        { dst: '10.67.0.0/26', reason: 'ENODEV: no such device' },
      ],
    });
  });
});
