// Service addresses seen from a top-of-rack router: three `podroute node run` agents in network
// namespaces peer (IPv4 and IPv6 sessions) with a real FRR in another AS that runs multipath.
// FRR learns the service cluster ranges of both families from every node and installs them in
// its kernel as one ECMP route over the three; an `externalTrafficPolicy: Local` service's /32
// and /128 come only from the nodes whose endpoints its EndpointSlices place there, move as the
// endpoints move, and are withdrawn when the last one goes, while the ranges stay; with the
// node-to-node mesh on too, nodes that learned it do not pass it on. Real packets from FRR's
// namespace reach a pod through a Local external IP (felix's DNAT on the announcing node), the
// client's address kept.
import assert from 'node:assert/strict';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import {
  API_VERSION,
  API_VERSION_K8S_CORE,
  type Resource,
  API_VERSION_K8S_DISCOVERY,
  SERVICE_NAME_LABEL,
  type EndpointSliceEndpoint,
} from '../../../lib/resources/index.js';
import { handMadePod } from '../../support/pod.js';
import { Frr } from '../../support/frr.js';
import type { Segment } from '../../support/netns.js';
import { AgentCluster, agentReady, type AgentProcess } from '../../support/node-agents.js';
import { waitFor } from '../../support/wait.js';

const TOR_AS = 65088;
const NODE_AS = 64512;
const TOR = { v4: '10.88.0.254', v6: 'fd00:88::fe' };
const NODES = ['n1', 'n2', 'n3'] as const;
const v4 = (i: number) => `10.88.0.${i}`;
const v6 = (i: number) => `fd00:88::${i}`;
const RANGE4 = '10.96.0.0/16';
const RANGE6 = 'fd00:96::/112';
const WEB4 = '10.96.0.10/32';
const WEB6 = 'fd00:96::10/128';
/** A pod's server: each connection gets "<name> <client address>". */
const SERVER = `const net = require('net'); const answer = (s) => { s.end(process.argv[1] + ' ' + s.remoteAddress + '\\n'); s.on('error', () => {}); }; net.createServer(answer).listen(8080, '0.0.0.0', () => net.createServer(answer).listen({ port: 8080, host: '::', ipv6Only: true }, () => console.log('listening')))`;
/** One connection: the line the far side sends, or the error; bounded at 2 s. */
const CLIENT = `const s = require('net').connect({ host: process.argv[1], port: 80 }); const t = setTimeout(() => { console.log('timeout'); process.exit(1); }, 2000); s.on('data', (d) => { process.stdout.write(String(d)); clearTimeout(t); s.destroy(); }); s.on('error', (e) => { console.log(e.code); process.exit(1); });`;

/** Next hops of one prefix in a kernel, from `ip -j route`: ECMP nexthops or the one gateway; [] when absent. */
function kernelNextHops(json: string): string[] {
  const routes = JSON.parse(json || '[]') as { gateway?: string; nexthops?: { gateway?: string }[] }[];
  const r = routes[0];
  if (!r) return [];
  return (r.nexthops ? r.nexthops.map((n) => n.gateway ?? '') : [r.gateway ?? '']).sort();
}

describe('services: FRR as top-of-rack learns service ranges by ECMP and a Local service only from nodes with its endpoints', function () {
  this.timeout(180_000);
  const cluster = new AgentCluster('svcadv');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  let segment: Segment;
  let frr: Frr;
  const agents: AgentProcess[] = [];
  /** Each node's link-local address on the segment → its global IPv6 address. */
  const linkLocal = new Map<string, string>();

  /** FRR's BGP paths for a prefix: the peers it came from, sorted; [] when FRR has none. */
  async function bgpFrom(prefix: string): Promise<string[]> {
    const family = prefix.includes(':') ? 'ipv6' : 'ipv4';
    const r = await frr.json<{ paths?: { peer?: { peerId?: string }; multipath?: boolean; bestpath?: unknown; valid?: boolean }[] }>(
      `show bgp ${family} unicast ${prefix} json`,
    );
    return (r.paths ?? [])
      .filter((p) => p.valid !== false)
      .map((p) => p.peer?.peerId ?? '?')
      .sort();
  }

  /**
   * The next hops FRR's zebra installed for a prefix in the top-of-rack's kernel, as the nodes'
   * global addresses: an IPv6 route goes via the link-local next hop the node sent beside its global one.
   */
  async function torKernel(prefix: string): Promise<string[]> {
    const family = prefix.includes(':') ? '-6' : '-4';
    const hops = kernelNextHops(await frr.ns.run(['ip', family, '-j', 'route', 'show', 'exact', prefix]));
    return hops.map((h) => linkLocal.get(h) ?? h).sort();
  }

  async function waitTor(prefix: string, want: string[], what: string): Promise<void> {
    await waitFor(async () => ({ bgp: await bgpFrom(prefix), kernel: await torKernel(prefix) }), {
      what: `${prefix} ${what}`,
      until: (s) => JSON.stringify(s.bgp) === JSON.stringify(want) && JSON.stringify(s.kernel) === JSON.stringify(want),
      timeoutMs: 20_000,
      intervalMs: 250,
    });
  }

  const service = (name: string, spec: Record<string, unknown>) =>
    ({ apiVersion: API_VERSION_K8S_CORE, kind: 'Service', metadata: { name, namespace: 'default' }, spec }) as unknown as Resource;

  function slice(name: string, svc: string, addressType: 'IPv4' | 'IPv6', endpoints: EndpointSliceEndpoint[]): Resource {
    return {
      apiVersion: API_VERSION_K8S_DISCOVERY,
      kind: 'EndpointSlice',
      metadata: { name, namespace: 'default', labels: { [SERVICE_NAME_LABEL]: svc } },
      spec: { addressType, endpoints, ports: [{ name: 'http', protocol: 'TCP', port: 8080 }] },
    } as unknown as Resource;
  }
  const at = (node: string, address: string, ready = true): EndpointSliceEndpoint => ({
    addresses: [address],
    nodeName: node,
    conditions: { ready },
  });

  /** Both slices of `web`: its endpoints per node (the pod addresses are not routed here; only where they sit counts). */
  async function webEndpoints(nodes: string[], notReady: string[] = []): Promise<void> {
    const all = [...nodes.map((n) => [n, true] as const), ...notReady.map((n) => [n, false] as const)];
    await ds.apply(
      slice(
        'web-v4',
        'web',
        'IPv4',
        all.map(([n, ready], i) => at(n, `10.94.0.${i + 1}`, ready)),
      ),
    );
    await ds.apply(
      slice(
        'web-v6',
        'web',
        'IPv6',
        all.map(([n, ready], i) => at(n, `fd00:94::${i + 1}`, ready)),
      ),
    );
  }

  before(async () => {
    await cluster.open();
    ds = cluster.ds;
    // The nodes peer with the top-of-rack only, as in a Calico ToR design (no full mesh).
    await ds.apply({
      apiVersion: API_VERSION,
      kind: 'BGPConfiguration',
      metadata: { name: 'default' },
      spec: {
        asNumber: NODE_AS,
        nodeToNodeMeshEnabled: false,
        serviceClusterIPs: [{ cidr: RANGE4 }, { cidr: RANGE6 }],
        serviceExternalIPs: [{ cidr: '192.0.2.0/24' }, { cidr: '2001:db8:e::/64' }],
      },
    });
    for (const [name, peerIP] of [
      ['tor-v4', TOR.v4],
      ['tor-v6', TOR.v6],
    ])
      await ds.apply({ apiVersion: API_VERSION, kind: 'BGPPeer', metadata: { name }, spec: { peerIP, asNumber: TOR_AS } });

    for (const [name, cidr, blockSize] of [
      ['pods-v4', '10.94.0.0/16', 26],
      ['pods-v6', 'fd00:94::/48', 122],
    ] as const)
      await ds.apply({
        apiVersion: API_VERSION,
        kind: 'IPPool',
        metadata: { name },
        spec: { cidr, blockSize, ipipMode: 'Never', vxlanMode: 'Never' },
      });

    segment = await lab.segment();
    const torNs = await lab.namespace('tor');
    await segment.attach(torNs, { ifname: 'eth0', v4: `${TOR.v4}/24`, v6: `${TOR.v6}/64` });
    frr = await Frr.start(torNs, {
      routerId: TOR.v4,
      asn: TOR_AS,
      peers: NODES.flatMap((_, i) => [
        { address: v4(i + 1), remoteAs: NODE_AS, families: ['ipv4' as const] },
        { address: v6(i + 1), remoteAs: NODE_AS, families: ['ipv6' as const] },
      ]),
    });
    // Multipath: equal paths from the three nodes (one AS, different next hops) are all used.
    for (const family of ['ipv4', 'ipv6']) await frr.configureBgp(`address-family ${family} unicast`, 'maximum-paths 8');

    await Promise.all(
      NODES.map(async (name, i) => {
        const ns = await lab.namespace(name);
        await segment.attach(ns, { ifname: 'eth0', v4: `${v4(i + 1)}/24`, v6: `${v6(i + 1)}/64` });
        const a = cluster.spawnAgent(ns, { name, ip: `${v4(i + 1)}/24`, flags: ['--ip6', `${v6(i + 1)}/64`] });
        agents.push(a);
        const addrs = JSON.parse(await ns.run(['ip', '-6', '-j', 'addr', 'show', 'dev', 'eth0', 'scope', 'link'])) as {
          addr_info: { local: string }[];
        }[];
        for (const x of addrs[0]?.addr_info ?? []) linkLocal.set(x.local, v6(i + 1));
        await agentReady(a, 60_000);
      }),
    );
  });
  after(() => cluster.close());

  it('FRR peers with every node over both families', async () => {
    await waitFor(() => frr.peers(), {
      what: 'six Established sessions at the top-of-rack',
      until: (ps) => ps.length === 6 && ps.every((p) => p.established),
      timeoutMs: 40_000,
      intervalMs: 250,
    });
  });

  it('the cluster ranges of both families come from every node: one ECMP route over the three in FRR’s kernel', async () => {
    await waitTor(RANGE4, [v4(1), v4(2), v4(3)], 'from the three nodes');
    await waitTor(RANGE6, [v6(1), v6(2), v6(3)], 'from the three nodes');
    const paths = await frr.json<{ paths: { multipath?: boolean; bestpath?: unknown }[] }>(`show bgp ipv4 unicast ${RANGE4} json`);
    assert.equal(paths.paths.filter((p) => p.multipath || p.bestpath).length, 3, JSON.stringify(paths));
  });

  it('a Local service’s /32 and /128 only from the node with its ready endpoint; a Cluster service adds nothing', async () => {
    await ds.apply(
      service('web', {
        type: 'NodePort',
        clusterIP: '10.96.0.10',
        clusterIPs: ['10.96.0.10', 'fd00:96::10'],
        ipFamilies: ['IPv4', 'IPv6'],
        ipFamilyPolicy: 'RequireDualStack',
        externalTrafficPolicy: 'Local',
        ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: 30880 }],
      }),
    );
    await ds.apply(
      service('plain', {
        type: 'NodePort',
        clusterIP: '10.96.0.11',
        ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: 30881 }],
      }),
    );
    await ds.apply(slice('plain-v4', 'plain', 'IPv4', [at('n1', '10.94.0.9')]));
    // n2 holds a ready endpoint; n3 one that is not ready.
    await webEndpoints(['n2'], ['n3']);
    await waitTor(WEB4, [v4(2)], 'from n2 alone');
    await waitTor(WEB6, [v6(2)], 'from n2 alone');
    assert.deepEqual(await bgpFrom('10.96.0.11/32'), [], 'a Cluster service has no /32 of its own');
    // The ranges are untouched.
    assert.deepEqual(await torKernel(RANGE4), [v4(1), v4(2), v4(3)]);
  });

  it('endpoints move: the /32 follows them (ECMP over two nodes, then one), and is withdrawn with the last endpoint', async () => {
    await webEndpoints(['n2', 'n3']);
    await waitTor(WEB4, [v4(2), v4(3)], 'from n2 and n3');
    await waitTor(WEB6, [v6(2), v6(3)], 'from n2 and n3');
    await webEndpoints(['n3']);
    await waitTor(WEB4, [v4(3)], 'from n3 alone after n2’s endpoint left');
    await waitTor(WEB6, [v6(3)], 'from n3 alone after n2’s endpoint left');
    // The last endpoint becomes not ready (terminating), then its slices empty: withdrawn everywhere.
    await webEndpoints([], ['n3']);
    await waitTor(WEB4, [], 'withdrawn when the last endpoint is not ready');
    await waitTor(WEB6, [], 'withdrawn when the last endpoint is not ready');
    await webEndpoints(['n1']);
    await waitTor(WEB4, [v4(1)], 'back from n1');
    await webEndpoints([]);
    await waitTor(WEB4, [], 'withdrawn when the slice is empty');
    await waitTor(WEB6, [], 'withdrawn when the slice is empty');
    await waitTor(RANGE4, [v4(1), v4(2), v4(3)], 'still from the three nodes');
    await waitTor(RANGE6, [v6(1), v6(2), v6(3)], 'still from the three nodes');
  });

  it('with the node-to-node mesh on as well, the /32 still leads FRR only to the node with the endpoint', async () => {
    const cfg = await ds.get('BGPConfiguration', 'default');
    await ds.apply({ ...cfg!, spec: { ...cfg!.spec, nodeToNodeMeshEnabled: true } });
    await webEndpoints(['n2']);
    // n1 and n3 have learned n2's /32 over the mesh (felix put it in their kernels)...
    for (const i of [1, 3]) {
      await waitFor(() => agents.find((a) => a.name === `n${i}`)!.ns.run(['ip', '-4', 'route', 'show', 'exact', WEB4]), {
        what: `${WEB4} via n2 learned by n${i} over the mesh`,
        until: (r) => r.includes(`via ${v4(2)} `),
        timeoutMs: 30_000,
        intervalMs: 250,
      });
    }
    // ...and do not pass it on to FRR, where their next hop would draw the traffic to them.
    await waitTor(WEB4, [v4(2)], 'towards n2 alone with the mesh on');
    await waitTor(WEB6, [v6(2)], 'towards n2 alone with the mesh on');
    for (let k = 0; k < 8; k++) {
      await new Promise((r) => setTimeout(r, 250));
      assert.deepEqual(await bgpFrom(WEB4), [v4(2)], 'passed on to FRR by a node without the endpoint');
    }
  });

  it('the service deleted while announced: its /32 goes', async () => {
    await webEndpoints(['n1']);
    await waitTor(WEB4, [v4(1)], 'from n1');
    await ds.delete('Service', 'default/web');
    await waitTor(WEB4, [], 'withdrawn with the service');
    await waitTor(WEB6, [], 'withdrawn with the service');
  });

  it('traffic from FRR’s side: a Local external IP (IPv4 and IPv6) reaches the pod on the node announcing it, with the client’s address kept; the cluster IP too', async () => {
    const n2 = agents.find((a) => a.name === 'n2')!;
    const pod = await handMadePod({ lab, ds, host: n2.ns, node: 'n2', name: 'shop1' });
    const server = pod.ns.spawn(['node', '-e', SERVER, 'shop1'], { name: 'shop1-server' });
    await waitFor(() => server.tail(), { what: 'the pod’s server listening', until: (t) => t.includes('listening'), timeoutMs: 10_000 });
    await ds.apply(
      service('shop', {
        clusterIP: '10.96.0.20',
        externalIPs: ['192.0.2.10'],
        externalTrafficPolicy: 'Local',
        ports: [{ name: 'http', port: 80, targetPort: 8080 }],
      }),
    );
    await ds.apply(slice('shop-v4', 'shop', 'IPv4', [at('n2', pod.ip!)]));
    await waitTor('192.0.2.10/32', [v4(2)], 'the external IP from n2 alone');
    await waitTor('10.96.0.20/32', [v4(2)], 'the cluster IP from n2 alone');
    const call = async (ip: string) => (await frr.ns.exec(['node', '-e', CLIENT, ip])).stdout.trim();
    // FRR's own address is the client: it is outside the cluster, and Local keeps it.
    await waitFor(() => call('192.0.2.10'), {
      what: 'an answer through 192.0.2.10:80 from the top-of-rack',
      until: (r) => r === `shop1 ${TOR.v4}`,
      timeoutMs: 20_000,
      intervalMs: 250,
    });
    assert.match(await call('10.96.0.20'), /^shop1 /);
    // IPv6: an IPv6-only Local service on the same pod, its external IP's /128 from n2 alone.
    await ds.apply(
      service('shop6', {
        clusterIP: 'fd00:96::20',
        ipFamilies: ['IPv6'],
        externalIPs: ['2001:db8:e::10'],
        externalTrafficPolicy: 'Local',
        ports: [{ name: 'http', port: 80, targetPort: 8080 }],
      }),
    );
    await ds.apply(slice('shop6-v6', 'shop6', 'IPv6', [at('n2', pod.ip6)]));
    await waitTor('2001:db8:e::10/128', [v6(2)], 'the IPv6 external IP from n2 alone');
    await waitFor(() => call('2001:db8:e::10'), {
      what: 'an answer through [2001:db8:e::10]:80 from the top-of-rack',
      until: (r) => r === `shop1 ${TOR.v6}`,
      timeoutMs: 20_000,
      intervalMs: 250,
    });
    // An address of the range that no service has is not answered as if it were one.
    assert.doesNotMatch(await call('192.0.2.11'), /^shop1/);
  });
});
