// A BIRD node of a lab: `lab status` reads its sessions from birdc's text, and a node without its
// config, or with one BIRD refuses, is refused naming the node's binds before anything starts.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { birdSessionsOf, ensureBird, parseBirdProtocols } from '../../../lib/lab/bird.js';
import type { LabState } from '../../../lib/lab/state.js';
import type { TopologyNode } from '../../../lib/lab/topology.js';

// `show protocols all` of BIRD 2.0.12 (a ToR with one node up, one node down), cut to what matters.
const SHOW_PROTOCOLS = `Name       Proto      Table      State  Since         Info
device1    Device     ---        up     19:11:05.490

kernel1    Kernel     master4    up     19:11:05.490
  Channel ipv4
    State:          UP
    Routes:         0 imported, 4 exported, 0 preferred

n3         BGP        ---        up     19:11:07.120  Established
  BGP state:          Established
    Neighbor address: 10.60.4.13
    Neighbor AS:      65002
    Local AS:         65202
  Channel ipv4
    State:          UP
    Table:          master4
    Routes:         1 imported, 3 exported, 1 preferred

n4         BGP        ---        start  19:11:05.490  Active        Socket: Connection refused
  BGP state:          Active
    Neighbor address: 10.60.4.14
    Neighbor AS:      65002
    Local AS:         65202
  Channel ipv4
    State:          DOWN
`;

describe('lab BIRD nodes', () => {
  it('reads each BGP protocol as a session: peer, AS, state as BIRD says it, prefixes imported', () => {
    assert.deepEqual(birdSessionsOf(parseBirdProtocols(SHOW_PROTOCOLS)), [
      { peer: '10.60.4.13', families: ['ipv4-unicast'], asn: 65002, state: 'Established', prefixesReceived: 1 },
      { peer: '10.60.4.14', families: ['ipv4-unicast'], asn: 65002, state: 'Active', prefixesReceived: 0 },
    ]);
  });

  describe('refused before it starts', () => {
    let dir: string;
    const state = (): LabState => ({ name: 't', topology: 't.clab.yml', prefix: 't-', dir, namespaces: [], processes: [], pods: [] });
    const node = (binds: TopologyNode['binds']): TopologyNode => ({
      name: 'tor',
      kind: 'linux',
      role: 'bird',
      image: 'podroute/bird:latest',
      binds,
      exec: [],
      env: {},
    });
    const procs = {
      start: () => assert.fail('nothing may start'),
      alive: () => undefined,
      tail: () => '',
    };
    before(() => (dir = mkdtempSync(join(tmpdir(), 'lbbird-'))));
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('a BIRD node with no file bound to /etc/bird/bird.conf', async () => {
      await assert.rejects(
        ensureBird(state(), node([]), procs),
        /topology\.nodes\.tor\.binds: a BIRD node needs a file bound to \/etc\/bird\/bird\.conf/,
      );
    });

    it('a config BIRD rejects, with BIRD’s words', async () => {
      const conf = join(dir, 'bad.conf');
      writeFileSync(conf, 'protocol bgp { neighbor; }\n');
      await assert.rejects(
        ensureBird(state(), node([{ source: conf, target: '/etc/bird/bird.conf', readOnly: true }]), procs),
        (e: Error) =>
          /topology\.nodes\.tor\.binds: bird rejected .*bad\.conf/.test(e.message) &&
          /bird\.conf:1:\d+ Local AS number must be set/.test(e.message),
      );
    });
  });
});
