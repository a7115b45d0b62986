// Two agents on a real Redis without persistence; Redis is SIGKILLed and comes back empty. The
// agents hold their ground: every route stays as it was and the sessions stay up, IPAM refuses
// to allocate, and each agent writes back its Node, its pods' WorkloadEndpoints and the pool.
// `ipam repair` rebuilds the allocations from them; the agents resume, and the next address
// handed out is one no pod holds.
import assert from 'node:assert/strict';
import { redisDatastore, type BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam, IpamError, memoryIdentityRecord, repairIpam } from '../../../lib/ipam/index.js';
import { startRedis, type RedisServer } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';
import { TestCluster } from './cluster.js';
import { freePort } from '../../../bgp/session/free-port.js';
import { API_VERSION } from '../../../lib/resources/index.js';

describe('node agent: the datastore comes back empty under it (Redis without persistence)', function () {
  this.timeout(120_000);
  let redis: RedisServer | undefined;
  let ds: BackendDatastore | undefined;
  let cluster: TestCluster | undefined;
  afterEach(async () => {
    await cluster?.stop();
    await ds?.close();
    await redis?.stop();
    cluster = ds = redis = undefined;
  });

  it('holds routes and sessions, refuses to allocate, restores what it owns; repair lets it resume with no address twice', async () => {
    redis = await startRedis({ persist: false });
    ds = await redisDatastore({ url: redis.url, name: 'store-loss' });
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'p' },
      spec: { cidr: '10.71.0.0/16', blockSize: 26, ipipMode: 'Never', vxlanMode: 'Never' },
    });
    const logs: [string, Record<string, unknown>][] = [];
    cluster = new TestCluster(ds, await freePort());
    for (const [name, i] of [
      ['n1', 1],
      ['n2', 2],
    ] as const)
      await cluster.add(name, i, { log: (e, f) => logs.push([e, f]) });
    // The CNI plugin's view: the identity it allocated from, kept across calls.
    const ipam = new Ipam(ds, { identity: memoryIdentityRecord() });
    const pods: { node: string; name: string; ip: string }[] = [];
    const addPod = async (node: string, name: string) => {
      const a = await ipam.autoAssign({ handle: `h-${name}`, node, attrs: { pod: name, namespace: 'default' } });
      const iface = `cali${name}`.slice(0, 15);
      cluster!.dataplanes.get(node)!.addLink(iface);
      await ds!.create({
        apiVersion: API_VERSION,
        kind: 'WorkloadEndpoint',
        metadata: { name: `${node}-${name}`, namespace: 'default' },
        spec: { node, pod: name, interfaceName: iface, ipNetworks: [a.cidr] },
      });
      pods.push({ node, name, ip: a.ip });
      return a.ip;
    };
    for (const [node, name] of [
      ['n1', 'a'],
      ['n1', 'b'],
      ['n2', 'c'],
      ['n2', 'd'],
    ])
      await addPod(node, name);
    const converged = () => {
      const routes = [cluster!.routes('n1'), cluster!.routes('n2')];
      const done = ['n1', 'n2'].every((n, i) => {
        const mine = pods.filter((p) => p.node === n);
        return mine.every((p) => routes[i]!.includes(`${p.ip}/32 dev cali${p.name}`)) && routes[i]!.some((r) => r.includes('via 127.0.0.'));
      });
      return done ? routes : undefined;
    };
    const before = await waitFor(converged, {
      what: 'both nodes route to the other block',
      until: (x) => x !== undefined,
      timeoutMs: 20_000,
    });
    assert.equal(before![0]!.filter((r) => r.startsWith('10.71.') && r.includes('dev cali')).length, 2);

    await redis.kill();
    await redis.restart(); // empty: no persistence
    await waitFor(() => logs.filter(([e]) => e === 'datastore-restored').length, {
      what: 'both agents restored what they own',
      until: (n) => n === 2,
      timeoutMs: 30_000,
    });
    assert.ok(
      logs.some(([e, f]) => e === 'datastore-replaced' && /empty|replaced/.test(String(f.problem))),
      `no datastore-replaced log for the empty store: ${JSON.stringify(logs.filter(([e]) => e === 'datastore-replaced'))}`,
    );

    // Held: nothing of the dataplane moves, the sessions stay up, and the status says why.
    for (let i = 0; i < 6; i++) {
      assert.deepEqual([cluster.routes('n1'), cluster.routes('n2')], before);
      await new Promise((r) => setTimeout(r, 250));
    }
    for (const n of ['n1', 'n2']) {
      const st = cluster.agents.get(n)!.status();
      assert.ok(st.datastoreHeld?.restored, `${n} reports it holds`);
      assert.ok(
        st.peers.every((p) => p.state === 'Established'),
        `${n} peers not all Established: ${st.peers.map((p) => `${p.address} ${p.state}`).join(', ')}`,
      );
    }
    await assert.rejects(
      ipam.autoAssign({ handle: 'during', node: 'n1' }),
      (e: unknown) => e instanceof IpamError && e.code === 'StoreReplaced',
    );
    // What the agents wrote back: the pool, both Nodes, all four pods.
    assert.deepEqual((await ds.list('WorkloadEndpoint')).items.map((w) => w.metadata.name).sort(), ['n1-a', 'n1-b', 'n2-c', 'n2-d']);
    assert.equal((await ds.list('Node')).items.length, 2);
    assert.equal((await ds.list('IPPool')).items.length, 1);

    const report = await repairIpam(ds);
    assert.equal(report.addresses, 4);
    await waitFor(() => ['n1', 'n2'].map((n) => cluster!.agents.get(n)!.status().datastoreHeld), {
      what: 'both agents resumed after the repair',
      until: (h) => h.every((x) => x === undefined),
      timeoutMs: 10_000,
    });
    assert.ok(
      logs.some(([e]) => e === 'datastore-repaired'),
      `no datastore-repaired log: ${logs
        .slice(-20)
        .map(([e]) => e)
        .join(', ')}`,
    );

    // Allocation resumes, never with an address a pod holds; the new pod's route reaches the other node.
    const fresh = await addPod('n2', 'e');
    assert.ok(!pods.slice(0, 4).some((p) => p.ip === fresh), `${fresh} was handed out again`);
    await waitFor(() => cluster!.routes('n1'), {
      what: 'the routes after the repair',
      until: (r) => before![0]!.every((x) => r.includes(x)),
      timeoutMs: 10_000,
    });
  });
});
