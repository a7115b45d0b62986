// Our reflector daemon with FRR, BIRD and our own speakers as clients, two reflectors in one
// cluster: RR1 has its clients configured one by one, RR2 takes them from a range. The two
// reflectors peer as non-clients, so each reflects every client route to the other, which
// must drop it (its own cluster ID in CLUSTER_LIST) and count it. Checked in every client's
// RIB: next hop of the originating client, ORIGINATOR_ID, CLUSTER_LIST, one path per reflector.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Bird } from '../../support/bird.js';
import { Frr } from '../../support/frr.js';
import { Lab, type Netns } from '../../support/netns.js';
import { Podroute } from '../../support/podroute.js';
import { waitFor } from '../../support/wait.js';
import { ReflectorDaemon, type ReflectorSpec } from './reflector-daemon.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const AS = 64512;
const CLUSTER = '10.97.0.100';
const RR1 = '10.97.0.101';
const RR2 = '10.97.0.102';
const clients = [
  { kind: 'frr', address: '10.97.0.1', prefix: '10.197.1.0/24' },
  { kind: 'bird', address: '10.97.0.2', prefix: '10.197.2.0/24' },
  { kind: 'pr3', address: '10.97.0.3', prefix: '10.197.3.0/24' },
  { kind: 'pr4', address: '10.97.0.4', prefix: '10.197.4.0/24' },
] as const;
type Client = (typeof clients)[number];

/** A path as every client's RIB is compared: where it came from and what it carries. */
interface ClientPath {
  prefix: string;
  from: string;
  nextHop: string;
  originatorId?: string;
  clusterList: string[];
}

interface FrrDetailPath {
  nexthops?: { ip: string }[];
  peer?: { peerId?: string };
  originatorId?: string;
  clusterList?: { list?: string[] };
}

const spec1: ReflectorSpec = {
  routerId: RR1,
  asn: AS,
  clusterId: CLUSTER,
  clients: clients.map((c) => c.address),
  nonClients: [{ address: RR2, asn: AS }],
};
const spec2: ReflectorSpec = {
  routerId: RR2,
  asn: AS,
  clusterId: CLUSTER,
  clientRanges: ['10.97.0.0/28'],
  nonClients: [{ address: RR1, asn: AS }],
};

describe('our reflector (two, one cluster) with FRR, BIRD and our speakers as clients', function () {
  this.timeout(120_000);
  let lab: Lab;
  let rrNs: Netns[] = [];
  const rr: ReflectorDaemon[] = [];
  let frr: Frr;
  let bird: Bird;
  const pr: Record<string, Podroute> = {};

  async function pathsOf(c: Client): Promise<ClientPath[]> {
    if (c.kind === 'frr') {
      const t = await frr.json<{ routes?: Record<string, FrrDetailPath[] | unknown[]> }>('show bgp ipv4 unicast json detail');
      const out: ClientPath[] = [];
      for (const [prefix, paths] of Object.entries(t.routes ?? {})) {
        for (const p of paths as FrrDetailPath[]) {
          if (!p.nexthops) continue; // the header object of the prefix
          // FRR names its own (network) routes' peer 0.0.0.0.
          const from = p.peer?.peerId === undefined || p.peer.peerId === '0.0.0.0' ? 'local' : p.peer.peerId;
          out.push({ prefix, from, nextHop: p.nexthops[0]!.ip, originatorId: p.originatorId, clusterList: p.clusterList?.list ?? [] });
        }
      }
      return out;
    }
    if (c.kind === 'bird') {
      return (await bird.routes('ipv4')).map((r) => ({
        prefix: r.prefix,
        from: r.from ?? 'local',
        nextHop: r.nextHops[0] ?? '',
        originatorId: r.attributes.originator_id,
        clusterList: r.attributes.cluster_list ? r.attributes.cluster_list.split(/\s+/) : [],
      }));
    }
    return (await pr[c.kind]!.paths('ipv4')).map((r) => ({
      prefix: r.prefix,
      from: r.from,
      nextHop: r.nextHop,
      originatorId: r.attributes.originatorId,
      clusterList: r.attributes.clusterList ?? [],
    }));
  }

  /** Waits until client `c` holds, for every other client's prefix, exactly the paths from `reflectors`. */
  async function waitReflected(c: Client, reflectors: string[], timeoutMs = 40_000): Promise<ClientPath[]> {
    const others = clients.filter((o) => o !== c);
    return waitFor(() => pathsOf(c), {
      what: `${c.kind}: every other client's route through ${reflectors.join(' and ')}, exactly once each`,
      until: (paths) =>
        others.every((o) => {
          const got = paths
            .filter((p) => p.prefix === o.prefix)
            .map((p) => p.from)
            .sort();
          return JSON.stringify(got) === JSON.stringify([...reflectors].sort());
        }),
      timeoutMs,
    });
  }

  before(async () => {
    lab = new Lab({ tag: 'rr' });
    const sw = await lab.segment();
    rrNs = [await lab.namespace('rr1'), await lab.namespace('rr2')];
    await sw.attach(rrNs[0]!, { v4: `${RR1}/24` });
    await sw.attach(rrNs[1]!, { v4: `${RR2}/24` });
    const ns: Record<string, Netns> = {};
    for (const c of clients) {
      ns[c.kind] = await lab.namespace(c.kind);
      await sw.attach(ns[c.kind]!, { v4: `${c.address}/24` });
    }
    const clientConfig = (c: Client) => ({
      routerId: c.address,
      asn: AS,
      peers: [RR1, RR2].map((address) => ({ address, remoteAs: AS })),
      networks: [c.prefix],
    });
    rr.push(await ReflectorDaemon.start(rrNs[0]!, spec1), await ReflectorDaemon.start(rrNs[1]!, spec2));
    [frr, bird, pr.pr3, pr.pr4] = await Promise.all([
      Frr.start(ns.frr!, clientConfig(clients[0])),
      Bird.start(ns.bird!, clientConfig(clients[1])),
      Podroute.start(ns.pr3!, clientConfig(clients[2])),
      Podroute.start(ns.pr4!, clientConfig(clients[3])),
    ]);
  });

  after(async () => {
    await lab?.destroy();
  });

  it('both reflectors reach Established with every client (RR1: configured, RR2: from its range) and with each other', async () => {
    for (const r of rr) {
      const s = await waitFor(() => r.status(), {
        what: `reflector ${r.spec.routerId}: 4 clients and 1 non-client Established`,
        until: (x) =>
          x.peers.filter((p) => p.state === 'Established' && p.role === 'client').length === 4 &&
          x.peers.some((p) => p.role === 'non-client' && p.state === 'Established'),
        timeoutMs: 40_000,
      });
      assert.deepEqual(
        s.peers
          .filter((p) => p.role === 'client')
          .map((p) => p.address)
          .sort(),
        clients.map((c) => c.address).sort(),
      );
      assert.equal(s.peers.filter((p) => p.dynamic).length, r === rr[1] ? 4 : 0);
    }
  });

  for (const c of clients) {
    it(`${c.kind} learns every other client's route from both reflectors, with the original next hop, ORIGINATOR_ID and CLUSTER_LIST`, async () => {
      const paths = await waitReflected(c, [RR1, RR2]);
      for (const o of clients.filter((x) => x !== c)) {
        for (const p of paths.filter((x) => x.prefix === o.prefix)) {
          assert.equal(p.nextHop, o.address, `${o.prefix} from ${p.from}: next hop`);
          assert.equal(p.originatorId, o.address, `${o.prefix} from ${p.from}: ORIGINATOR_ID`);
          assert.deepEqual(p.clusterList, [CLUSTER], `${o.prefix} from ${p.from}: CLUSTER_LIST`);
        }
      }
      assert.ok(!paths.some((p) => p.prefix === c.prefix && p.from !== 'local'), 'its own route is not reflected back to it');
    });
  }

  it('each reflector drops and counts the client routes the other reflects to it (its cluster ID is in CLUSTER_LIST)', async () => {
    for (const r of rr) {
      const other = r === rr[0] ? RR2 : RR1;
      const s = await r.status();
      const fromOther = s.peers.find((p) => p.address === other)!;
      assert.ok(fromOther.loopRejected >= clients.length, `${r.spec.routerId}: ${fromOther.loopRejected} loops from ${other}`);
      assert.equal(fromOther.prefixesReceived, 0, 'nothing from the other reflector is kept');
      assert.equal(s.loopRejected, fromOther.loopRejected);
      const paths = await r.paths();
      for (const c of clients)
        assert.deepEqual(
          paths.filter((p) => p.prefix === c.prefix).map((p) => p.from),
          [c.address],
        );
    }
    const { stdout } = await promisify(execFile)(
      'node',
      [join(ROOT, 'bin/podroute.js'), 'reflector', 'status', '--control', rr[0]!.control],
      { cwd: ROOT },
    );
    assert.match(stdout, new RegExp(`cluster ID ${CLUSTER.replace(/\./g, '\\.')}`));
    assert.match(stdout, /clients 4\/4 up, 4 IPv4 and 0 IPv6 prefixes, loops dropped [1-9]/);
    // The clients share update groups: one, or two when some advertised LLGR (FRR and BIRD do) and some not.
    const clientGroups = [...stdout.matchAll(/ibgp clients( \(LLGR\))?: (\d+) peers/g)];
    assert.ok(clientGroups.length >= 1 && clientGroups.length <= 2, `client update groups: ${stdout}`);
    assert.equal(
      clientGroups.reduce((n, m) => n + Number(m[2]), 0),
      4,
      `every client in a client group: ${stdout}`,
    );
  });

  it('RR1 stops: every client keeps every route through RR2', async () => {
    await rr[0]!.stop('maintenance');
    for (const c of clients) await waitReflected(c, [RR2]);
    // And it stays so while RR1 is away (no late withdrawal from a stale-path sweep).
    await new Promise((r) => setTimeout(r, 3000));
    for (const c of clients) await waitReflected(c, [RR2], 1000);
  });

  it('RR1 starts again: every client has each route once per reflector, nothing duplicated or lost', async () => {
    rr[0] = await ReflectorDaemon.start(rrNs[0]!, spec1);
    for (const c of clients) {
      const paths = await waitReflected(c, [RR1, RR2], 60_000);
      const reflected = paths.filter((p) => p.from !== 'local');
      assert.equal(reflected.length, 2 * (clients.length - 1), `${c.kind}: ${JSON.stringify(reflected)}`);
    }
  });
});
