// The CNI fast path: the runtime runs the C shim (cni/shim/podroute-cni), which hands the call
// to the node agent over its CNI socket; without an agent it runs the Node plugin. Two real
// `podroute node run` agents in namespaces on one segment, a real Redis, pods in their own
// namespaces, real packets. The shim the agent-path cases run is a copy in the lab folder, with
// no Node plugin beside it and none on PATH: a call that did not reach the agent fails there.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import type { Segment } from '../../support/netns.js';
import { AgentCluster, agentReady, agentStatus, ipPool, podNetconf, type AgentProcess } from '../../support/node-agents.js';
import { buildShimOrSkip, SHIM } from '../../support/cni-shim.js';
import { waitFor } from '../../support/wait.js';
import { callCni, podEnv, type CniCall } from '../../support/cni-call.js';
import { cidrAddress } from '../../../ip/index.js';

const BARE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

interface Result {
  cniVersion: string;
  interfaces: { name: string; mac?: string; sandbox?: string }[];
  ips: { address: string; gateway?: string; interface?: number }[];
  routes: { dst: string; gw?: string }[];
  dns: Record<string, unknown>;
}

/** A result with what differs per pod (names, addresses, MACs, namespaces) blanked out: its shape. */
function shape(r: Result): unknown {
  return {
    ...r,
    interfaces: r.interfaces.map((i) => ({
      ...i,
      name: i.name.replace(/^cali[0-9a-f]{11}$/, 'cali*'),
      mac: i.mac ? 'mac' : undefined,
      sandbox: i.sandbox ? 'netns' : undefined,
    })),
    ips: r.ips.map((i) => ({ ...i, address: i.address.replace(/^10\.93\.0\.\d+\/32$/, 'pod/32') })),
  };
}

describe('CNI fast path: the C shim calls the node agent (real agents, Redis, kernel)', function () {
  this.timeout(240_000);
  const cluster = new AgentCluster('cfp');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  let sock: string;
  let segment: Segment;
  let shim: string;
  const agents: AgentProcess[] = [];
  const cniSocket = (node: string) => join(lab.dir, `${node}-cni.sock`);

  before(async function () {
    buildShimOrSkip(this);
    shim = join(lab.dir, 'podroute-cni');
    copyFileSync(SHIM, shim);
    await cluster.open();
    ({ sock, ds } = cluster);
    await ds.create(ipPool('pods', '10.93.0.0/24', { blockSize: 28 }));
    segment = await lab.segment();
    for (const [i, name] of ['n1', 'n2'].entries()) {
      const ns = await lab.namespace(name);
      await segment.attach(ns, { ifname: 'eth0', v4: `10.92.0.${i + 1}/24` });
      await ns.ip('route', 'add', 'default', 'via', '10.92.0.254', 'dev', 'eth0');
      agents.push(cluster.spawnAgent(ns, { name, ip: `10.92.0.${i + 1}/24`, flags: ['--cni-socket', cniSocket(name)] }));
    }
    for (const a of agents) await agentReady(a);
    await waitFor(
      () => Promise.all(agents.map(async (a) => (await agentStatus(a)).peers.filter((p) => p.state === 'Established').length)),
      {
        what: 'the two agents in session',
        until: (c) => c.every((n) => n === 1),
        timeoutMs: 30_000,
        intervalMs: 200,
      },
    );
  });
  after(() => cluster.close());

  const node = (name: string) => agents.find((a) => a.name === name)!;
  /** Through the shim to `node`'s agent, with a PATH on which no Node plugin is found. */
  const viaShim = (n: string, command: string, env: Record<string, string>, stdin: string): Promise<CniCall> =>
    callCni(node(n).ns, command, { PATH: BARE_PATH, PODROUTE_CNI_SOCKET: cniSocket(n), ...env }, stdin, [shim]);
  const viaNode = (n: string, command: string, env: Record<string, string>, stdin: string): Promise<CniCall> =>
    callCni(node(n).ns, command, env, stdin);
  const used = async () => (await new Ipam(ds).usage()).reduce((n, p) => n + p.used, 0);
  const addr = (r: CniCall) => cidrAddress((r.json as unknown as Result).ips[0]!.address);
  const pod = async (name: string) => ({ name, containerId: `ctr-${name}-${process.pid}`, ns: await lab.namespace(name) });

  it('ADD through the shim answers as the Node plugin does; the pod pings a pod on the other node; DEL frees its address', async () => {
    const a = await pod('fa');
    const b = await pod('fb');
    const before = await used();
    const ra = await viaShim('n1', 'ADD', podEnv(a), podNetconf('n1', sock));
    assert.equal(ra.code, 0, ra.stdout);
    const rb = await viaNode('n2', 'ADD', podEnv(b), podNetconf('n2', sock));
    assert.equal(rb.code, 0, rb.stdout);
    assert.deepEqual(shape(ra.json as unknown as Result), shape(rb.json as unknown as Result));
    assert.match(addr(ra), /^10\.93\.0\.\d+$/);
    assert.equal(await used(), before + 2);
    const wep = (await ds.list('WorkloadEndpoint')).items.find((w) => w.spec.ipNetworks[0] === `${addr(ra)}/32`);
    assert.equal(wep?.spec.node, 'n1');

    // Each node's kernel learns the other's pod block through BGP; then packets flow both ways.
    for (const [here, there] of [
      ['n2', '10.92.0.1'],
      ['n1', '10.92.0.2'],
    ] as const)
      await waitFor(() => node(here).ns.ip('-4', 'route', 'show', 'proto', '81'), {
        what: `the other node's pod block in ${here}'s kernel`,
        until: (routes) => routes.includes(`via ${there}`),
        timeoutMs: 20_000,
      });
    const ping = await a.ns.exec(['ping', '-c', '2', '-i', '0.2', '-W', '3', addr(rb)], { timeoutMs: 15_000 });
    assert.equal(ping.code, 0, ping.stdout + ping.stderr);

    const del = await viaShim('n1', 'DEL', podEnv(a), podNetconf('n1', sock));
    assert.equal(del.code, 0, del.stdout);
    assert.equal(del.stdout, '');
    assert.equal(await used(), before + 1);
    assert.equal((await ds.list('WorkloadEndpoint')).items.filter((w) => w.spec.node === 'n1').length, 0);
    const hostIf = (ra.json as unknown as Result).interfaces[0]!.name;
    assert.notEqual((await node('n1').ns.exec(['ip', 'link', 'show', 'dev', hostIf])).code, 0, `${hostIf} is still there`);
    const delB = await viaNode('n2', 'DEL', podEnv(b), podNetconf('n2', sock));
    assert.equal(delB.code, 0, delB.stdout);
    assert.equal(await used(), before);
  });

  it('a bad call gets the same CNI error and exit code through the shim as from the Node plugin', async () => {
    const p = await pod('fbad');
    const cases: [string, Record<string, string>, string][] = [
      ['ADD', podEnv(p), 'not json'],
      ['ADD', podEnv(p), podNetconf('n1', sock, { mtu: 12 })],
      ['ADD', podEnv(p), podNetconf('n1', sock, { cniVersion: '9.9.9' })],
      ['ADD', { ...podEnv(p), CNI_IFNAME: 'has space' }, podNetconf('n1', sock)],
      ['BOGUS', podEnv(p), podNetconf('n1', sock)],
      ['ADD', { ...podEnv(p), CNI_NETNS: '/var/run/netns/absent-fast-path' }, podNetconf('n1', sock)],
    ];
    for (const [command, env, stdin] of cases) {
      const s = await viaShim('n1', command, env, stdin);
      const n = await viaNode('n1', command, env, stdin);
      assert.equal(s.code, 1, `${command} ${stdin}: ${s.stdout}`);
      assert.equal(s.code, n.code);
      assert.equal(s.stdout, n.stdout);
      assert.equal(typeof s.json?.code, 'number');
    }
    // VERSION too, and nothing was allocated by any of it.
    const v = await viaShim('n1', 'VERSION', {}, '{"cniVersion":"0.4.0"}');
    assert.equal(v.stdout, (await viaNode('n1', 'VERSION', {}, '{"cniVersion":"0.4.0"}')).stdout);
    assert.equal((await ds.list('WorkloadEndpoint')).items.length, 0);
  });

  it('with no agent socket, a stale one or PODROUTE_CNI_SOCKET=off, the shim runs the Node plugin and the pod still works', async () => {
    const stale = join(lab.dir, 'stale.sock');
    // A socket file nobody listens on, as a killed agent leaves: connect() is refused.
    execFileSync('python3', ['-c', `import socket; socket.socket(socket.AF_UNIX).bind(${JSON.stringify(stale)})`]);
    for (const [i, where] of [join(lab.dir, 'absent.sock'), stale, 'off'].entries()) {
      const p = await pod(`fnone${i}`);
      const env = { ...podEnv(p), PODROUTE_CNI_SOCKET: where };
      const add = await callCni(node('n1').ns, 'ADD', env, podNetconf('n1', sock), [SHIM]);
      assert.equal(add.code, 0, `${where}: ${add.stdout}`);
      assert.match(addr(add), /^10\.93\.0\.\d+$/);
      // The agent routes to the pod once it sees the WorkloadEndpoint.
      await waitFor(() => p.ns.exec(['ping', '-c', '1', '-W', '1', '10.92.0.1'], { timeoutMs: 5_000 }), {
        what: `${where}: the pod reaching its node`,
        until: (r) => r.code === 0,
        timeoutMs: 15_000,
      });
      const del = await callCni(node('n1').ns, 'DEL', env, podNetconf('n1', sock), [SHIM]);
      assert.equal(del.code, 0, del.stdout);
    }
    // The lab's copy has no Node plugin to fall back to: it says so as a CNI error, try again later.
    const p = await pod('fnone9');
    const lost = await callCni(
      node('n1').ns,
      'ADD',
      { ...podEnv(p), PATH: BARE_PATH, PODROUTE_CNI_SOCKET: stale },
      podNetconf('n1', sock),
      [shim],
    );
    assert.equal(lost.code, 1);
    assert.equal(lost.json?.code, 11, lost.stdout);
    assert.equal((await ds.list('WorkloadEndpoint')).items.length, 0);
  });

  it("a recreated sandbox through the shim: the old sandbox's DEL leaves the new one's network, and the agent logs what it left", async () => {
    // Two sandboxes of one pod, as Kubernetes recreating a sandbox calls them: ADD A, ADD B, DEL A.
    const pod = 'front-0';
    const [a, b] = await Promise.all([lab.namespace('fsa'), lab.namespace('fsb')]);
    const env = (ns: typeof a, id: string) => podEnv({ containerId: `${id}-${process.pid}`, ns, name: pod }, 'web');
    const [envA, envB] = [env(a, 'sandbox-a'), env(b, 'sandbox-b')];
    const before = await used();
    const addA = await viaShim('n1', 'ADD', envA, podNetconf('n1', sock));
    assert.equal(addA.code, 0, addA.stdout);
    const addB = await viaShim('n1', 'ADD', envB, podNetconf('n1', sock));
    assert.equal(addB.code, 0, addB.stdout);
    const hostIf = (addB.json as unknown as Result).interfaces[0]!.name;
    const delA = await viaShim('n1', 'DEL', envA, podNetconf('n1', sock));
    assert.equal(delA.code, 0, delA.stdout);
    assert.equal((await node('n1').ns.exec(['ip', 'link', 'show', 'dev', hostIf])).code, 0, `${hostIf} is still there after A's DEL`);
    const checkA = await viaShim('n1', 'CHECK', envA, podNetconf('n1', sock));
    assert.equal(checkA.json?.code, 101, checkA.stdout);
    assert.match(String(checkA.json?.msg), new RegExp(envB.CNI_CONTAINERID), 'the stale CHECK names the live sandbox');

    // B is whole: its veth, its address, its endpoint; CHECK agrees and it reaches its node.
    assert.match(await b.ip('-o', '-4', 'addr', 'show', 'dev', 'eth0'), new RegExp(`inet ${addr(addB).replace(/\./g, '\\.')}/32`));
    const check = await viaShim('n1', 'CHECK', envB, podNetconf('n1', sock, { prevResult: addB.json }));
    assert.equal(check.code, 0, check.stdout);
    assert.equal(await used(), before + 1, "A's address went with B's ADD, B's stays");
    await waitFor(() => b.exec(['ping', '-c', '1', '-W', '1', '10.92.0.1'], { timeoutMs: 5_000 }), {
      what: 'the new sandbox reaching its node after the old one was deleted',
      until: (r) => r.code === 0,
      timeoutMs: 15_000,
    });
    // The agent said what it left and whose it is.
    const logged = readFileSync(node('n1').proc.logFile, 'utf8');
    assert.match(logged, new RegExp(`cni-left.*host veth ${hostIf}.*${envB.CNI_CONTAINERID}`), 'the agent logs the veth it left');
    assert.match(
      logged,
      new RegExp(`cni-replaced.*host veth ${hostIf}.*${envA.CNI_CONTAINERID}`),
      "the agent logs B's ADD replacing A's veth",
    );

    const delB = await viaShim('n1', 'DEL', envB, podNetconf('n1', sock));
    assert.equal(delB.code, 0, delB.stdout);
    assert.notEqual((await node('n1').ns.exec(['ip', 'link', 'show', 'dev', hostIf])).code, 0, `${hostIf} went with B's DEL`);
    assert.equal(await used(), before);
  });

  it('concurrent ADDs through the shim get distinct addresses, and DELs free them all', async () => {
    const before = await used();
    const pods = await Promise.all(['fc0', 'fc1', 'fc2', 'fc3'].map(pod));
    const adds = await Promise.all(pods.map((p) => viaShim('n1', 'ADD', podEnv(p), podNetconf('n1', sock))));
    for (const r of adds) assert.equal(r.code, 0, r.stdout);
    const ips = adds.map(addr);
    assert.equal(new Set(ips).size, ips.length, `addresses: ${ips.join(', ')}`);
    assert.equal(await used(), before + pods.length);
    const dels = await Promise.all(pods.map((p) => viaShim('n1', 'DEL', podEnv(p), podNetconf('n1', sock))));
    for (const r of dels) assert.equal(r.code, 0, r.stdout);
    assert.equal(await used(), before);
  });
});
