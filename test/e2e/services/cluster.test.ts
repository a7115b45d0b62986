// Services end to end: four `podroute node run` agents in network namespaces on one L2 segment,
// a real Redis, pods made by running podroute-cni as a runtime does (their labels and named
// ports in args.cni), Services applied with `podroute apply -f`. The agents' EndpointSlice
// controllers fill the slices from the pods, each agent's felix DNATs in the kernel's
// nftables, and every check is real packets from a pod or from a namespace outside the cluster.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runDatastoreCommand } from '../../../lib/cli/datastore.js';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { SERVICE_NAME_LABEL, API_VERSION, validateResource } from '../../../lib/resources/index.js';
import { callCni, podEnv } from '../../support/cni-call.js';
import type { Netns, Segment } from '../../support/netns.js';
import { AgentCluster, type AgentProcess, agentStatus, podNetconf, ROOT, ipPool } from '../../support/node-agents.js';
import type { ManagedProcess } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';
import { cidrAddress } from '../../../ip/index.js';

const PEER = join(fileURLToPath(new URL('.', import.meta.url)), 'echo-peer.ts');
const SUBNET = '10.95.0';
const OUTSIDE = `${SUBNET}.200`;
const K8S_NS = 'shop';
// Inside the BGPConfiguration's serviceClusterIPs (10.96.41.0/24), as the API server would require.
const CLUSTER_IP = '10.96.41.10';
const NODE_PORT = 30480;
const UDP_NODE_PORT = 30481;
const LOCAL_NODE_PORT = 30482;

interface Pod {
  name: string;
  node: string;
  ns: Netns;
  ip: string;
  containerId: string;
  server?: ManagedProcess;
}

interface Counted {
  by: Record<string, number>;
  errors: string[];
}

const SERVICES = `
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: ${K8S_NS}}
spec:
  type: NodePort
  clusterIP: ${CLUSTER_IP}
  selector: {app: echo}
  ports:
  - {name: tcp-echo, port: 80, targetPort: echo, nodePort: ${NODE_PORT}}
  - {name: udp-echo, protocol: UDP, port: 53, targetPort: 5353, nodePort: ${UDP_NODE_PORT}}
---
apiVersion: v1
kind: Service
metadata: {name: sticky, namespace: ${K8S_NS}}
spec:
  selector: {app: echo}
  sessionAffinity: ClientIP
  sessionAffinityConfig: {clientIP: {timeoutSeconds: 600}}
  ports:
  - {port: 80, targetPort: 8080}
---
apiVersion: v1
kind: Service
metadata: {name: local, namespace: ${K8S_NS}}
spec:
  type: NodePort
  selector: {app: echo}
  externalTrafficPolicy: Local
  ports:
  - {port: 80, targetPort: echo, nodePort: ${LOCAL_NODE_PORT}}
`;

describe('services end to end: four node agents, CNI pods, ClusterIP, NodePort, affinity, UDP', function () {
  this.timeout(300_000);
  const cluster = new AgentCluster('svc');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  let sock: string;
  let segment: Segment;
  let outside: Netns;
  const agents = cluster.agents;
  const pods = new Map<string, Pod>();

  async function startAgent(name: string, index: number): Promise<AgentProcess> {
    const ip = `${SUBNET}.${index}`;
    const ns = await lab.namespace(name);
    await segment.attach(ns, { ifname: 'eth0', v4: `${ip}/24` });
    await ns.ip('route', 'add', 'default', 'via', `${SUBNET}.254`, 'dev', 'eth0');
    return cluster.startAgent(ns, { name, ip: `${ip}/24` });
  }

  async function addPod(node: string, name: string, labels: Record<string, string>): Promise<Pod> {
    const ns = await lab.namespace(name);
    const containerId = `ctr-${name}-${process.pid}`;
    const args = {
      cni: {
        labels: Object.entries(labels).map(([key, value]) => ({ key, value })),
        ports: [{ name: 'echo', protocol: 'TCP', port: 8080 }],
      },
    };
    const r = await callCni(agents.get(node)!.ns, 'ADD', podEnv({ containerId, ns, name }, K8S_NS), podNetconf(node, sock, { args }));
    assert.equal(r.code, 0, `CNI ADD ${name}: ${r.stdout}`);
    const ip = cidrAddress((r.json as { ips: { address: string }[] }).ips[0]!.address);
    const pod: Pod = { name, node, ns, ip, containerId };
    pods.set(name, pod);
    return pod;
  }

  async function serve(pod: Pod): Promise<void> {
    pod.server = pod.ns.spawn(['node', '--import', 'tsx', PEER, 'serve', '--name', pod.name, '--tcp', '8080', '--udp', '5353'], {
      name: 'echo',
      cwd: ROOT,
    });
    await waitFor(async () => pod.server!.tail(), {
      what: `${pod.name} listening`,
      until: (t) => t.includes('listening') || !pod.server!.running,
      timeoutMs: 20_000,
    });
    assert.ok(pod.server.running, `${pod.name} server: ${pod.server.tail()}`);
  }

  async function delPod(pod: Pod): Promise<void> {
    await pod.server?.stop();
    const r = await callCni(agents.get(pod.node)!.ns, 'DEL', podEnv(pod, K8S_NS), podNetconf(pod.node, sock));
    assert.equal(r.code, 0, `CNI DEL ${pod.name}: ${r.stdout}`);
    pods.delete(pod.name);
  }

  /** `count` from inside `from`: K connections (or datagrams) to host:port, who answered each. */
  async function count(from: Netns, host: string, port: number, k: number, udp = false): Promise<Counted> {
    const argv = ['node', '--import', 'tsx', PEER, 'count', '--host', host, '--port', String(port), '--count', String(k)];
    const r = await from.exec(udp ? [...argv, '--udp'] : argv, { timeoutMs: 120_000 });
    assert.equal(r.code, 0, `count from ${from.shortName}: ${r.stderr}`);
    return JSON.parse(r.stdout.trim().split('\n').pop()!) as Counted;
  }

  /** The endpoints the service's slices list, by address. */
  async function sliceAddresses(service: string): Promise<string[]> {
    return (await ds.list('EndpointSlice')).items
      .filter((s) => s.metadata.namespace === K8S_NS && s.metadata.labels?.[SERVICE_NAME_LABEL] === service)
      .flatMap((s) => s.spec.endpoints.flatMap((e) => e.addresses))
      .sort();
  }

  /** Waits until `k` probes from `from` are all answered, by exactly the pods named. */
  async function answeredBy(from: Netns, host: string, port: number, names: string[], udp = false): Promise<void> {
    await waitFor(() => count(from, host, port, 30, udp), {
      what: `${host}:${port}${udp ? '/udp' : ''} from ${from.shortName} answered by ${names.join(',')}`,
      until: (c) => c.errors.length === 0 && JSON.stringify(Object.keys(c.by).sort()) === JSON.stringify([...names].sort()),
      timeoutMs: 30_000,
      intervalMs: 300,
    });
  }

  before(async () => {
    await cluster.open();
    ({ sock, ds } = cluster);
    await ds.create(ipPool('pods', '10.99.0.0/16'));
    segment = await lab.segment();
    outside = await lab.namespace('outside');
    await segment.attach(outside, { ifname: 'eth0', v4: `${OUTSIDE}/24` });
    await Promise.all([startAgent('n1', 1), startAgent('n2', 2), startAgent('n3', 3), startAgent('n4', 4)]);
    for (const [i, node] of ['n1', 'n2', 'n3'].entries()) await serve(await addPod(node, `echo${i + 1}`, { app: 'echo' }));
    await addPod('n4', 'client', { app: 'client' });
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'BGPConfiguration',
      metadata: { name: 'default' },
      spec: { serviceClusterIPs: [{ cidr: '10.96.41.0/24' }] },
    });
    const file = join(lab.dir, 'services.yaml');
    writeFileSync(file, SERVICES);
    const out: string[] = [];
    const code = await runDatastoreCommand(['apply', '-f', file], { stdout: (s) => out.push(s), stderr: (s) => out.push(s) }, ds);
    assert.equal(code, 0, out.join(''));
  });
  after(() => cluster.close());

  it('the agents fill the slices from the pods: three endpoints, the named port resolved', async () => {
    const want = ['echo1', 'echo2', 'echo3'].map((n) => pods.get(n)!.ip).sort();
    await waitFor(() => sliceAddresses('echo'), {
      what: 'the echo slices to list the three pods',
      until: (a) => JSON.stringify(a) === JSON.stringify(want),
      timeoutMs: 20_000,
    });
    const slices = (await ds.list('EndpointSlice')).items.filter((s) => s.metadata.labels?.[SERVICE_NAME_LABEL] === 'echo');
    assert.equal(slices.length, 1, 'every pod resolves the ports alike: one slice');
    assert.deepEqual(slices[0]!.spec.ports, [
      { name: 'tcp-echo', protocol: 'TCP', port: 8080 },
      { name: 'udp-echo', protocol: 'UDP', port: 5353 },
    ]);
    assert.deepEqual(slices[0]!.spec.endpoints.map((e) => e.nodeName).sort(), ['n1', 'n2', 'n3']);
  });

  it('300 connections from a pod on a fourth node to the cluster IP spread over all three endpoints', async () => {
    const client = pods.get('client')!.ns;
    await answeredBy(client, CLUSTER_IP, 80, ['echo1', 'echo2', 'echo3']);
    const c = await count(client, CLUSTER_IP, 80, 300);
    assert.deepEqual(c.errors, []);
    const total = Object.values(c.by).reduce((a, b) => a + b, 0);
    assert.equal(total, 300);
    assert.deepEqual(Object.keys(c.by).sort(), ['echo1', 'echo2', 'echo3']);
    for (const [name, n] of Object.entries(c.by))
      assert.ok(n >= 0.2 * 300 && n <= 0.47 * 300, `${name} got ${n} of 300 (${JSON.stringify(c.by)})`);
  });

  it('UDP to the cluster IP: every datagram answered, by more than one endpoint', async () => {
    const client = pods.get('client')!.ns;
    await answeredBy(client, CLUSTER_IP, 53, ['echo1', 'echo2', 'echo3'], true);
    const c = await count(client, CLUSTER_IP, 53, 60, true);
    assert.deepEqual(c.errors, []);
    assert.equal(Object.keys(c.by).length, 3, JSON.stringify(c.by));
  });

  it('a pod reaching its own service: every connection answered, its own included (hairpin)', async () => {
    const c = await count(pods.get('echo1')!.ns, CLUSTER_IP, 80, 60);
    assert.deepEqual(c.errors, []);
    assert.ok((c.by.echo1 ?? 0) > 0, `echo1 reached itself through the service: ${JSON.stringify(c.by)}`);
  });

  it('a Service in the store with an address not its own is programmed on no node, said and counted; one written after it is', async () => {
    // Written straight into the store, past `podroute apply`'s checks, as another tool could.
    const direct = (name: string, clusterIP: string, port: number, protocol = 'TCP') =>
      ds.create(
        validateResource({
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name, namespace: K8S_NS },
          spec: { clusterIP, selector: { app: 'client' }, ports: [{ port, protocol, targetPort: 8080 }] },
        }),
      );
    await direct('google', '8.8.8.8', 53, 'UDP');
    await direct('outside', '10.200.0.10', 80);
    // After them, a good one: once it is in a node's table, that node has seen the two before it.
    await direct('late', '10.96.41.20', 80);
    const table = (a: AgentProcess) => a.ns.run(['nft', 'list', 'table', 'inet', 'podroute']);
    for (const a of agents.values()) {
      const t = await waitFor(() => table(a), {
        what: `10.96.41.20 in ${a.name}'s table`,
        until: (x) => x.includes('10.96.41.20'),
        timeoutMs: 20_000,
      });
      assert.ok(t!.includes(CLUSTER_IP), `${a.name} still programs ${CLUSTER_IP}`);
      for (const ip of ['8.8.8.8', '10.200.0.10']) assert.ok(!t!.includes(ip), `${a.name} programs no ${ip}:\n${t}`);
      const status = await agentStatus(a);
      assert.equal(status.services?.failures, 2, `${a.name}: ${JSON.stringify(status.services)}`);
      assert.deepEqual(status.services?.refused.map((r) => [r.service, r.field]).sort(), [
        [`${K8S_NS}/google`, 'spec.clusterIP'],
        [`${K8S_NS}/outside`, 'spec.clusterIP'],
      ]);
      const warned = readFileSync(a.proc.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"event":"service-refused"'))
        .map((l) => JSON.parse(l) as { level: string; service: string; field: string; error: string });
      assert.deepEqual(
        warned.map((w) => [w.level, w.service, w.field]).sort(),
        [
          ['warning', `${K8S_NS}/google`, 'spec.clusterIP'],
          ['warning', `${K8S_NS}/outside`, 'spec.clusterIP'],
        ],
        `${a.name}'s warnings`,
      );
      assert.match(
        warned.find((w) => w.service.endsWith('/google'))!.error,
        /8\.8\.8\.8 is outside the service cluster IP range \(10\.96\.41\.0\/24/,
      );
    }
    // The cluster IP beside them answers as before.
    await answeredBy(pods.get('client')!.ns, CLUSTER_IP, 80, ['echo1', 'echo2', 'echo3']);
    for (const name of ['google', 'outside', 'late']) await ds.delete('Service', `${K8S_NS}/${name}`);
    for (const a of agents.values())
      await waitFor(() => agentStatus(a), {
        what: `${a.name} to refuse nothing`,
        until: (st) => st.services?.failures === 0,
        timeoutMs: 20_000,
      });
  });

  it('externalTrafficPolicy Local: a NodePort answers only from the endpoint on its node, and not on a node without one', async () => {
    for (const [i, name] of ['echo1', 'echo2', 'echo3'].entries()) await answeredBy(outside, `${SUBNET}.${i + 1}`, LOCAL_NODE_PORT, [name]);
    const none = await count(outside, `${SUBNET}.4`, LOCAL_NODE_PORT, 3);
    assert.deepEqual(none.by, {}, 'n4 has no echo pod: nothing answers there');
    assert.equal(none.errors.length, 3);
  });

  it('a Service without a cluster IP gets one from the range; ClientIP affinity pins the client to one endpoint', async () => {
    const client = pods.get('client')!.ns;
    // The agents allocate it from the BGPConfiguration's serviceClusterIPs.
    const sticky = await waitFor(() => ds.get('Service', `${K8S_NS}/sticky`), {
      what: 'the sticky service to get a cluster IP',
      until: (s) => s?.spec.clusterIP !== undefined,
      timeoutMs: 20_000,
    });
    const STICKY_IP = sticky!.spec.clusterIP!;
    assert.match(STICKY_IP, /^10\.96\.41\.\d+$/);
    await waitFor(() => count(client, STICKY_IP, 80, 1), {
      what: 'the sticky service to answer',
      until: (c) => c.errors.length === 0,
      timeoutMs: 30_000,
      intervalMs: 300,
    });
    const c = await count(client, STICKY_IP, 80, 60);
    assert.deepEqual(c.errors, []);
    assert.equal(Object.keys(c.by).length, 1, `one endpoint for one client: ${JSON.stringify(c.by)}`);
  });

  it('NodePort from a namespace outside the cluster works on every node, TCP and UDP', async () => {
    for (const [i, node] of ['n1', 'n2', 'n3', 'n4'].entries()) {
      const ip = `${SUBNET}.${i + 1}`;
      await answeredBy(outside, ip, NODE_PORT, ['echo1', 'echo2', 'echo3']);
      const udp = await waitFor(() => count(outside, ip, UDP_NODE_PORT, 20, true), {
        what: `UDP NodePort on ${node}`,
        until: (c) => c.errors.length === 0,
        timeoutMs: 20_000,
        intervalMs: 300,
      });
      assert.ok(Object.keys(udp!.by).length >= 2, `${node} UDP: ${JSON.stringify(udp!.by)}`);
    }
  });

  it('an endpoint removed gets no new connections while an established connection to it keeps working', async () => {
    const client = pods.get('client')!.ns;
    // Hold a connection to the cluster IP until it lands on echo1 (the random choice decides), bounded.
    let held: ManagedProcess | undefined;
    for (let i = 0; i < 30 && !held; i++) {
      const p = client.spawn(['node', '--import', 'tsx', PEER, 'hold', '--host', CLUSTER_IP, '--port', '80'], {
        name: `hold${i}`,
        cwd: ROOT,
      });
      const hello = await waitFor(async () => /hello (\S+)/.exec(p.tail())?.[1], {
        what: 'the held connection to be greeted',
        until: (x) => x !== undefined || !p.running,
        timeoutMs: 20_000,
      });
      if (hello === 'echo1') held = p;
      else await p.stop();
    }
    assert.ok(held, 'a connection to echo1 within 30 tries');
    const echoes = () => Number([...held!.tail().matchAll(/echo (\d+)/g)].pop()?.[1] ?? 0);
    // The pod leaves the service (its label goes, as when it is being deleted and drains).
    const wep = (await ds.list('WorkloadEndpoint')).items.find((w) => w.spec.pod === 'echo1')!;
    await ds.update({ ...wep, metadata: { ...wep.metadata, labels: { ...wep.metadata.labels, app: 'leaving' } } });
    await waitFor(() => sliceAddresses('echo'), {
      what: 'echo1 to leave the slice',
      until: (a) => !a.includes(pods.get('echo1')!.ip) && a.length === 2,
      timeoutMs: 20_000,
    });
    await answeredBy(client, CLUSTER_IP, 80, ['echo2', 'echo3']);
    const c = await count(client, CLUSTER_IP, 80, 100);
    assert.deepEqual(c.errors, []);
    assert.equal(c.by.echo1, undefined, `no new connection to echo1: ${JSON.stringify(c.by)}`);
    const before = echoes();
    await new Promise((r) => setTimeout(r, 1500));
    assert.ok(held!.running && echoes() >= before + 5, `the held connection still answers: ${held!.tail().slice(-300)}`);
    await held!.stop();
  });

  it('a pod deleted through CNI leaves the service: every new connection reaches the others', async () => {
    await delPod(pods.get('echo2')!);
    await waitFor(() => sliceAddresses('echo'), {
      what: 'echo2 to leave the slice',
      until: (a) => a.length === 1 && a[0] === pods.get('echo3')!.ip,
      timeoutMs: 20_000,
    });
    const client = pods.get('client')!.ns;
    await answeredBy(client, CLUSTER_IP, 80, ['echo3']);
    const c = await count(client, CLUSTER_IP, 80, 50);
    assert.deepEqual(c, { by: { echo3: 50 }, errors: [] });
  });
});
