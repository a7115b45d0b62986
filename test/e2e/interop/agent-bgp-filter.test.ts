// The node agent with an FRR top-of-rack, its BGPPeers written as a Calico fabric writes them:
// `localASNumber` (the rack's AS on these sessions) and `filters` naming a BGPFilter, over IPv4
// and IPv6. The export rules keep one of the node's blocks from FRR's RIB, the import rules one
// of FRR's prefixes from the node's RIB and kernel; an edit of the BGPFilter moves both without
// a new session; FRR sees the node as the local AS.
import assert from 'node:assert/strict';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { API_VERSION, type Resource } from '../../../lib/resources/index.js';
import { callControl } from '../../../lib/bgpd/control.js';
import { Frr } from '../../support/frr.js';
import type { Netns } from '../../support/netns.js';
import { AgentCluster, type AgentProcess, agentReady, ipPool } from '../../support/node-agents.js';
import { waitFor } from '../../support/wait.js';

const NODE = { v4: '10.97.0.1', v6: 'fd00:97::1' };
const TOR = { v4: '10.97.0.3', v6: 'fd00:97::3', asn: 65020 };
const RACK_AS = 65011;
const THEIRS = { v4: ['10.98.1.0/24', '10.98.2.0/24'], v6: ['fd00:98:1::/48', 'fd00:98:2::/48'] };
type Fam = 'v4' | 'v6';

const filter = (blocks: Record<Fam, string>, theirs: Record<Fam, string>): Resource =>
  ({
    apiVersion: API_VERSION,
    kind: 'BGPFilter',
    metadata: { name: 'tor' },
    spec: {
      exportV4: [{ action: 'Reject', matchOperator: 'Equal', cidr: blocks.v4 }],
      exportV6: [{ action: 'Reject', matchOperator: 'Equal', cidr: blocks.v6 }],
      importV4: [{ action: 'Reject', matchOperator: 'Equal', cidr: theirs.v4 }],
      importV6: [{ action: 'Reject', matchOperator: 'Equal', cidr: theirs.v6 }],
    },
  }) as Resource;

describe('agent with an FRR top-of-rack: BGPFilter and localASNumber', function () {
  this.timeout(180_000);
  const cluster = new AgentCluster('abf');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  let nsNode: Netns;
  let frr: Frr;
  let agent: AgentProcess;
  const blocks: Record<Fam, string[]> = { v4: [], v6: [] };

  // The node's routes at FRR: those whose AS_PATH is the rack's AS alone.
  const frrHas = async (f: Fam) =>
    (await frr.routes(f === 'v4' ? 'ipv4' : 'ipv6')).filter((r) => r.asPath.join(' ') === String(RACK_AS)).map((r) => r.prefix);
  const ourRib = async () =>
    (await callControl<{ prefix: string; from: string }[]>(agent.control, 'GET', '/bgp/routes')).map((r) => r.prefix);
  const kernel = async (prefix: string) =>
    (await nsNode.ip(...(prefix.includes(':') ? ['-6'] : []), 'route', 'show', 'exact', prefix)).trim();

  before(async () => {
    await cluster.open();
    ds = cluster.ds;
    // Small blocks, so a few addresses give the node three blocks of each family.
    await ds.create(ipPool('pods-v4', '10.96.0.0/16', { blockSize: 30 }));
    await ds.create(ipPool('pods-v6', 'fd00:96::/48', { blockSize: 126 }));
    const ipam = new Ipam(ds);
    for (const [f, family] of [
      ['v4', 4],
      ['v6', 6],
    ] as const) {
      for (let i = 0; blocks[f].length < 3 && i < 20; i++) {
        await ipam.autoAssign({ handle: `h-${f}-${i}`, node: 'n1', family });
        blocks[f] = (await ipam.blocksForNode('n1')).map((b) => b.cidr).filter((c) => c.includes(':') === (f === 'v6'));
      }
    }
    await ds.create(filter({ v4: blocks.v4[0]!, v6: blocks.v6[0]! }, { v4: THEIRS.v4[0]!, v6: THEIRS.v6[0]! }));
    for (const [name, peerIP] of [
      ['tor-v4', TOR.v4],
      ['tor-v6', TOR.v6],
    ])
      await ds.create({
        apiVersion: API_VERSION,
        kind: 'BGPPeer',
        metadata: { name },
        spec: { peerIP, asNumber: TOR.asn, localASNumber: RACK_AS, filters: ['tor'] },
      } as Resource);
    const segment = await lab.segment();
    nsNode = await lab.namespace('n1');
    const nsTor = await lab.namespace('tor');
    await segment.attach(nsNode, { ifname: 'eth0', v4: `${NODE.v4}/24`, v6: `${NODE.v6}/64` });
    await segment.attach(nsTor, { ifname: 'eth0', v4: `${TOR.v4}/24`, v6: `${TOR.v6}/64` });
    frr = await Frr.start(
      nsTor,
      {
        routerId: TOR.v4,
        asn: TOR.asn,
        peers: [
          { address: NODE.v4, remoteAs: RACK_AS, families: ['ipv4'] },
          { address: NODE.v6, remoteAs: RACK_AS, families: ['ipv6'] },
        ],
        networks: [...THEIRS.v4, ...THEIRS.v6],
      },
      // With zebra: bgpd alone drops IPv6 routes whose next hop comes with a link-local address.
    );
    agent = cluster.spawnAgent(nsNode, { name: 'n1', ip: `${NODE.v4}/24`, flags: ['--ip6', `${NODE.v6}/64`, '--health-port', '0'] });
    await agentReady(agent, 60_000);
  });
  after(() => cluster.close());

  it('FRR sees the node as the BGPPeer’s localASNumber, on both sessions', async () => {
    const peers = await waitFor(() => frr.peers(), {
      what: 'both sessions Established at FRR',
      until: (ps) => ps.length === 2 && ps.every((p) => p.established),
      timeoutMs: 40_000,
      intervalMs: 250,
    });
    assert.deepEqual(
      peers.map((p) => p.remoteAs),
      [RACK_AS, RACK_AS],
      JSON.stringify(peers),
    );
    assert.equal((await frr.neighbor(NODE.v4)).remoteAs, RACK_AS);
  });

  for (const f of ['v4', 'v6'] as const) {
    it(`${f}: the export rule keeps one block from FRR, the import rule one of FRR’s prefixes from the node’s RIB and kernel`, async () => {
      const want = blocks[f].slice(1).sort();
      const got = await waitFor(() => frrHas(f), {
        what: `FRR holding the node's other ${f} blocks`,
        until: (ps) => want.every((b) => ps.includes(b)),
        timeoutMs: 30_000,
        intervalMs: 250,
      });
      assert.ok(!got.includes(blocks[f][0]!), `FRR has the rejected block ${blocks[f][0]}: ${got.join(', ')}`);
      await waitFor(() => kernel(THEIRS[f][1]!), {
        what: `${THEIRS[f][1]} in the node's kernel`,
        until: (r) => r !== '',
        timeoutMs: 30_000,
      });
      assert.equal(await kernel(THEIRS[f][0]!), '', `${THEIRS[f][0]} was imported into the kernel`);
      const rib = await ourRib();
      assert.ok(rib.includes(THEIRS[f][1]!) && !rib.includes(THEIRS[f][0]!), `the node's RIB: ${rib.join(', ')}`);
    });
  }

  it('an edit of the BGPFilter takes effect on the running sessions, both ways and both families', async () => {
    const before = (await frr.neighbor(NODE.v4)).connectionsEstablished;
    await ds.apply(filter({ v4: blocks.v4[1]!, v6: blocks.v6[1]! }, { v4: THEIRS.v4[1]!, v6: THEIRS.v6[1]! }));
    for (const f of ['v4', 'v6'] as const) {
      const got = await waitFor(() => frrHas(f), {
        what: `FRR holding ${blocks[f][0]} and not ${blocks[f][1]}`,
        until: (ps) => ps.includes(blocks[f][0]!) && !ps.includes(blocks[f][1]!),
        timeoutMs: 20_000,
        intervalMs: 250,
      });
      assert.ok(got.includes(blocks[f][2]!), `the untouched block went: ${got.join(', ')}`);
      await waitFor(async () => [await kernel(THEIRS[f][0]!), await kernel(THEIRS[f][1]!)], {
        what: `${THEIRS[f][0]} in the node's kernel and ${THEIRS[f][1]} out of it`,
        until: ([a, b]) => a !== '' && b === '',
        timeoutMs: 20_000,
        intervalMs: 250,
      });
    }
    assert.equal((await frr.neighbor(NODE.v4)).connectionsEstablished, before, 'the session was made again');
    assert.equal((await frr.neighbor(NODE.v4)).bgpState, 'Established');
  });
});
