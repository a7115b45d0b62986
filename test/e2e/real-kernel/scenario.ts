// What runs inside the kernel VM for real-kernel.test.ts, bundled to one JavaScript file first: three
// nodes in two subnets joined by a router that knows no pod route (n1 and n2 on lan1, n3 on lan2),
// a `podroute node run` agent on each (compiled dist/), the cluster's resources from lab/,
// pods made by podroute-cni; then the facts the suite asserts, gathered with real packets:
// routes, tunl0, MTUs, pings, underlay captures, the pool's mode switched under a running ping,
// then SCTP associations under a NetworkPolicy and through a Service. It asserts little itself (a wait that times out ends it); the mocha suite outside reads
// result.json and the captures. Nothing is torn down: the VM's file system and network go with it.
// Every wait is generous: the VM's CPU is emulated, and slower still on a loaded machine.
//
//   node real-kernel-scenario.mjs LAB_DIR OUT_DIR
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { callControl } from '../../../lib/bgpd/control.js';
import { runDatastoreCommand } from '../../../lib/cli/datastore.js';
import { redisDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { execCommand, run } from '../../../lib/lab/system.js';
import { IPIP_ADDRESS_ANNOTATION, type IPPool } from '../../../lib/resources/index.js';
import { readPcap } from '../../support/pcap.js';
import { sleep, waitFor } from '../../support/wait.js';
import type { IpipScenarioResult, ModeSwitch, PingResult, SctpProbe } from './result.js';

const [labDir, out] = process.argv.slice(2);
if (!labDir || !out) throw new Error('usage: real-kernel-scenario LAB_DIR OUT_DIR');
const ROOT = join(fileURLToPath(import.meta.url), '../../..');
const t0 = Date.now();
const say = (what: string) => process.stderr.write(`[${((Date.now() - t0) / 1000).toFixed(1)} s] ${what}\n`);
const dir = mkdtempSync(join(tmpdir(), 'ipip-'));
const SLOW = 300_000;
const SERVICE_IP = '10.96.41.20';
const SCTP_POLICY = `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: echo-sctp-80, namespace: default}
spec:
  podSelector: {matchLabels: {app: echo}}
  policyTypes: [Ingress]
  ingress:
  - ports: [{protocol: SCTP, port: 80}]
`;
const SCTP_SERVICE = `
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: default}
spec:
  serviceClusterIPs: [{cidr: 10.96.41.0/24}]
---
apiVersion: v1
kind: Service
metadata: {name: echo-sctp, namespace: default}
spec:
  clusterIP: ${SERVICE_IP}
  selector: {app: echo}
  ports:
  - {name: sctp, protocol: SCTP, port: 8080, targetPort: 80}
`;

const ns = (node: string) => `ip-${node}`;
const NODES = {
  n1: { lan: 'lan1', ip: '10.50.1.11/24', gw: '10.50.1.1' },
  n2: { lan: 'lan1', ip: '10.50.1.12/24', gw: '10.50.1.1' },
  n3: { lan: 'lan2', ip: '10.50.2.13/24', gw: '10.50.2.1' },
} as const;
type NodeName = keyof typeof NODES;
const ip = (...args: string[]) => run(['ip', ...args], { timeoutMs: 60_000 });

// The underlay: two bridges, the router between them, each node on its bridge.
// Loaded before the agents start: the first policy and service tables would load nftables'
// modules inside the agents' bounded applies.
await run([
  'modprobe',
  '-a',
  'ipip',
  'sctp',
  'nf_tables',
  'nf_conntrack',
  'nf_nat',
  'nft_ct',
  'nft_nat',
  'nft_chain_nat',
  'nft_numgen',
  'nft_masq',
]);
for (const n of ['lan1', 'lan2', 'router', 'n1', 'n2', 'n3']) {
  await ip('netns', 'add', ns(n));
  await ip('-n', ns(n), 'link', 'set', 'lo', 'up');
}
for (const lan of ['lan1', 'lan2']) await ip('-n', ns(lan), 'link', 'add', 'br0', 'up', 'type', 'bridge');
const attach = async (node: string, dev: string, lan: string, address: string) => {
  await ip('-n', ns(node), 'link', 'add', dev, 'type', 'veth', 'peer', 'name', `${lan}-${node}`, 'netns', ns(lan));
  await ip('-n', ns(lan), 'link', 'set', `${lan}-${node}`, 'master', 'br0', 'up');
  await ip('-n', ns(node), 'addr', 'add', address, 'dev', dev);
  await ip('-n', ns(node), 'link', 'set', dev, 'up');
};
await attach('router', 'eth1', 'lan1', '10.50.1.1/24');
await attach('router', 'eth2', 'lan2', '10.50.2.1/24');
await run(['ip', 'netns', 'exec', ns('router'), 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
for (const [n, c] of Object.entries(NODES)) {
  await attach(n, 'eth1', c.lan, c.ip);
  await ip('-n', ns(n), 'route', 'add', 'default', 'via', c.gw);
}
say('underlay wired');

// The datastore, and the cluster's resources through `podroute apply`'s own code.
const sock = join(dir, 'redis.sock');
await run([
  'redis-server',
  '--port',
  '0',
  '--unixsocket',
  sock,
  '--unixsocketperm',
  '777',
  '--save',
  '',
  '--appendonly',
  'no',
  '--daemonize',
  'yes',
  '--pidfile',
  join(dir, 'redis.pid'),
]);
await waitFor(() => existsSync(sock), { what: 'redis socket', timeoutMs: SLOW });
const ds = await redisDatastore({ url: sock });
let applied = '';
const code = await runDatastoreCommand(
  ['apply', '-f', join(labDir, 'cluster.yaml')],
  { stdout: (t) => (applied += t), stderr: (t) => (applied += t), readStdin: () => '' },
  ds,
);
if (code !== 0) throw new Error(`podroute apply -f cluster.yaml: ${applied}`);
say('cluster resources applied');

const result: Partial<IpipScenarioResult> = { timings: {} };
/** Written after each step: a run cut short still hands over what it measured. */
const timing = (k: string) => {
  result.timings![k] = Date.now() - t0;
  writeFileSync(join(out, 'result.json'), JSON.stringify(result, null, 2));
};
const logs: Record<string, string> = {};
for (const n of Object.keys(NODES)) {
  logs[n] = join(dir, `${n}.log`);
  const fd = openSync(logs[n]!, 'a');
  spawn(
    'ip',
    [
      'netns',
      'exec',
      ns(n),
      process.execPath,
      join(ROOT, 'bin/podroute.js'),
      'node',
      'run',
      '--config',
      join(labDir, `${n}.yaml`),
      '--control',
      join(dir, `${n}.sock`),
      '--datastore',
      sock,
      '--cni-socket',
      'off',
      '--health-port',
      '0',
    ],
    {
      stdio: ['ignore', fd, fd],
      detached: true,
    },
  ).unref();
}
const agentLog = (n: string) => readFileSync(logs[n]!, 'utf8').slice(-3000);
for (const n of Object.keys(NODES))
  await waitFor(async () => (await callControl<{ ready: boolean }>(join(dir, `${n}.sock`), 'GET', '/status')).ready, {
    what: `agent ${n} ready`,
    timeoutMs: SLOW,
    intervalMs: 500,
  }).catch((e: Error) => Promise.reject(new Error(`${e.message}\n${agentLog(n)}`)));
timing('agents');
say('agents ready');

/** A pod through the podroute-cni binary, as a container runtime makes one. */
const podAdd = async (node: NodeName, name: string, labels: Record<string, string>) => {
  const netns = `ip-pod-${name}`;
  await ip('netns', 'add', netns);
  await ip('-n', netns, 'link', 'set', 'lo', 'up');
  const netconf = JSON.stringify({
    cniVersion: '1.0.0',
    name: 'k8s-pod-network',
    type: 'podroute-cni',
    nodename: node,
    datastore: { type: 'redis', url: sock },
    args: { cni: { labels: Object.entries(labels).map(([key, value]) => ({ key, value })) } },
  });
  const env = [
    `CNI_COMMAND=ADD`,
    `CNI_CONTAINERID=ctr-${name}`,
    `CNI_NETNS=/var/run/netns/${netns}`,
    'CNI_IFNAME=eth0',
    `CNI_ARGS=K8S_POD_NAMESPACE=default;K8S_POD_NAME=${name}`,
    `PODROUTE_CNI_STATE_DIR=${join(dir, 'cni')}`,
  ];
  const call = () =>
    execCommand(['ip', 'netns', 'exec', ns(node), 'env', ...env, process.execPath, join(ROOT, 'bin/podroute-cni.js')], {
      input: netconf,
      timeoutMs: SLOW,
    });
  // Code 11 is "try again later" (the datastore did not answer in time): a runtime calls again.
  const r = await waitFor(call, {
    what: `podroute-cni ADD ${name} past "try again later"`,
    until: (x) => !/"code":11/.test(x.stdout),
    timeoutMs: SLOW,
    intervalMs: 2000,
  });
  if (r.code !== 0) throw new Error(`podroute-cni ADD ${name} on ${node}: ${r.stdout}${r.stderr}`);
  const got = JSON.parse(r.stdout) as { ips: { address: string }[] };
  return { name, node, namespace: netns, ip: got.ips[0]!.address.split('/')[0]! };
};

try {
  // At once: each call starts Node, which is what takes time in the VM.
  const [podA, podB, podC] = await Promise.all([
    podAdd('n1', 'a', { role: 'client' }),
    podAdd('n2', 'b', { app: 'echo' }),
    podAdd('n3', 'c', { app: 'other' }),
  ]);
  const pods = { a: podA, b: podB, c: podC };
  timing('pods');
  say(`pods ${Object.values(pods).map((p) => `${p.name}@${p.node}=${p.ip}`)}`);
  const ipam = new Ipam(ds);
  const blocks: Record<string, string> = {};
  for (const n of ['n1', 'n2', 'n3']) blocks[n] = (await ipam.blocksForNode(n)).map((b) => b.cidr).find((c) => !c.includes(':'))!;
  result.blocks = blocks;

  const routes = async (node: string) => (await run(['ip', '-n', ns(node), '-4', 'route', 'show', 'proto', '81'])).trim().split('\n');
  const routeTo = async (node: string, block: string) => (await routes(node)).find((l) => l.startsWith(`${block} `)) ?? '';
  // Every node reaches the two other blocks: in its subnet straight, across over tunl0.
  await waitFor(
    async () => {
      const all = await Promise.all(
        ['n1', 'n2', 'n3'].map(async (n) =>
          Object.entries(blocks)
            .filter(([m]) => m !== n)
            .map(async ([, b]) => routeTo(n, b)),
        ),
      );
      return (await Promise.all(all.flat())).every((r) => r !== '');
    },
    { what: 'routes to every remote block on every node', timeoutMs: SLOW, intervalMs: 1000 },
  );
  timing('routes');
  say('routes in place');

  const nodes: IpipScenarioResult['nodes'] = {};
  for (const n of ['n1', 'n2', 'n3']) {
    const node = await waitFor(async () => (await ds.get('Node', n))?.metadata.annotations?.[IPIP_ADDRESS_ANNOTATION], {
      what: `${n}'s tunl0 address in its Node`,
      timeoutMs: SLOW,
    });
    const tunl0 = await waitFor(
      async () => JSON.parse(await run(['ip', '-n', ns(n), '-j', 'addr', 'show', 'dev', 'tunl0'])) as TunlJson[],
      {
        what: `${n}'s tunl0 with its address`,
        until: (l) => l[0]?.addr_info?.some((a) => a.local === node) === true,
        timeoutMs: SLOW,
      },
    );
    nodes[n] = {
      tunnelAddressAnnotation: node!,
      tunl0: {
        mtu: tunl0[0]!.mtu,
        up: tunl0[0]!.flags.includes('UP'),
        addresses: tunl0[0]!.addr_info.map((a) => `${a.local}/${a.prefixlen}`),
      },
      routes: await routes(n),
    };
  }
  result.nodes = nodes;

  const podNs = (p: keyof typeof pods) => pods[p].namespace;
  const linkMtu = async (netns: string, dev: string) =>
    (JSON.parse(await run(['ip', '-n', netns, '-j', 'link', 'show', 'dev', dev])) as { mtu: number }[])[0]!.mtu;
  const hostIf = async (p: keyof typeof pods) =>
    (await run(['ip', '-n', ns(pods[p].node), 'route', 'show', `${pods[p].ip}/32`])).split(' dev ')[1]!.split(' ')[0]!;
  result.pods = {};
  for (const p of ['a', 'b', 'c'] as const) {
    const iface = await hostIf(p);
    result.pods[p] = {
      node: pods[p].node,
      ip: pods[p].ip!,
      mtu: await linkMtu(podNs(p), 'eth0'),
      hostIf: iface,
      hostIfMtu: await linkMtu(ns(pods[p].node), iface),
    };
  }

  const ping = async (from: keyof typeof pods, to: string, args: string[] = []): Promise<PingResult> => {
    const r = await execCommand(['ip', 'netns', 'exec', podNs(from), 'ping', '-n', '-c', '5', '-i', '0.2', '-W', '3', ...args, to], {
      timeoutMs: SLOW,
    });
    return { code: r.code, output: (r.stdout + r.stderr).trim() };
  };

  // A ping first, so the ARP entries and the sessions' first packets are not in the captures.
  await ping('a', pods.c.ip!, ['-c', '2']);
  await ping('a', pods.b.ip!, ['-c', '2']);
  result.pings = {
    crossSubnet: await capture(ns('router'), 'eth1', join(out, 'cross-subnet.pcap'), () => ping('a', pods.c.ip!)),
    sameSubnet: await capture(ns('n1'), 'eth1', join(out, 'same-subnet.pcap'), () => ping('a', pods.b.ip!)),
  };
  timing('pings');
  say(`pings: ${result.pings.crossSubnet.code} ${result.pings.sameSubnet.code}`);

  // MTU: a 1,400-byte packet with DF crosses tunl0; a bigger one is refused in the pod itself
  // (its MTU is tunl0's); from a pod whose MTU is larger, n1 answers "fragmentation needed".
  const big = async () => {
    const dev = result.pods!.a!.hostIf;
    await run(['ip', '-n', podNs('a'), 'link', 'set', 'eth0', 'mtu', '1500']);
    await run(['ip', '-n', ns('n1'), 'link', 'set', dev, 'mtu', '1500']);
    try {
      return await ping('a', pods.c.ip!, ['-M', 'do', '-s', '1450', '-c', '1']);
    } finally {
      await run(['ip', '-n', ns('n1'), 'link', 'set', dev, 'mtu', String(result.pods!.a!.hostIfMtu)]);
      await run(['ip', '-n', podNs('a'), 'link', 'set', 'eth0', 'mtu', String(result.pods!.a!.mtu)]);
    }
  };
  result.mtu = {
    df1400: await ping('a', pods.c.ip!, ['-M', 'do', '-s', '1372', '-c', '3']),
    tooBigInPod: await ping('a', pods.c.ip!, ['-M', 'do', '-s', '1400', '-c', '1']),
    tooBigForwarded: await capture(ns('n1'), result.pods.a!.hostIf, join(out, 'frag-needed.pcap'), big, 'icmp'),
  };
  timing('mtu');
  say('mtu checked');

  // The pool's mode switched under a running ping between n1 and n2 (one subnet): CrossSubnet
  // to Always moves b's block onto tunl0, back again off it; the route is replaced in place.
  result.switches = [];
  for (const [mode, via] of [
    ['Always', / dev tunl0 /],
    ['CrossSubnet', / dev eth1 /],
  ] as const) {
    result.switches.push(await switchWithLogs(mode, via));
    say(`switched to ${mode}`);
    if (mode === 'Always')
      result.pings.sameSubnetAlways = await capture(ns('n1'), 'eth1', join(out, 'same-subnet-always.pcap'), () => ping('a', pods.b.ip!));
  }
  timing('switches');

  async function switchWithLogs(mode: IPPool['spec']['ipipMode'], via: RegExp): Promise<ModeSwitch> {
    const monitor = spawn('ip', ['netns', 'exec', ns('n1'), 'ip', '-4', 'monitor', 'route'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let events = '';
    monitor.stdout.setEncoding('utf8').on('data', (d: string) => (events += d));
    const pinger = spawn('ip', ['netns', 'exec', podNs('a'), 'ping', '-n', '-i', '0.1', '-W', '1', '-c', '3000', pods.b.ip!], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let pingOut = '';
    pinger.stdout.setEncoding('utf8').on('data', (d: string) => (pingOut += d));
    const exited = new Promise((r) => pinger.once('close', r));
    const started = Date.now();
    try {
      await sleep(2000);
      const pool = (await ds.get('IPPool', 'ipip-pods'))!;
      await ds.apply({ ...pool, metadata: { ...pool.metadata, resourceVersion: undefined }, spec: { ...pool.spec, ipipMode: mode } });
      const route = await waitFor(() => routeTo('n1', blocks.n2!), {
        what: `n1's route to n2's block after ${mode}`,
        until: (r) => via.test(r),
        timeoutMs: SLOW,
      });
      await waitFor(() => routeTo('n2', blocks.n1!), {
        what: `n2's route to n1's block after ${mode}`,
        until: (r) => via.test(r),
        timeoutMs: SLOW,
      });
      const reprogrammedMs = Date.now() - started - 2000;
      await sleep(3000);
      pinger.kill('SIGINT');
      await Promise.race([exited, sleep(10_000)]);
      return { mode, route, reprogrammedMs, ping: pingOut.trim(), routeEvents: events.trim().split('\n').filter(Boolean) };
    } finally {
      pinger.kill('SIGKILL');
      monitor.kill('SIGKILL');
    }
  }

  // SCTP, which this machine's own kernel lacks: a NetworkPolicy that admits SCTP 80 only, and
  // a Service whose SCTP port DNATs to it, with real associations (socat) from pod a to pod b.
  // Its own phase: what fails here is told apart from the IPIP results before it.
  try {
    for (const port of [80, 81])
      spawn('ip', ['netns', 'exec', podNs('b'), 'socat', `SCTP-LISTEN:${port},fork,reuseaddr`, `SYSTEM:echo b-${port}`], {
        stdio: 'ignore',
        detached: true,
      }).unref();
    const sctp = async (to: string, port: number): Promise<SctpProbe> => {
      const r = await execCommand(
        // One way (-u), reading only: SCTP has no half-close, so a client that ended its input would
        // SHUTDOWN the whole association before the server's reply could come back.
        ['ip', 'netns', 'exec', podNs('a'), 'socat', '-u', '-T', '10', `SCTP-CONNECT:${to}:${port},connect-timeout=4`, 'STDOUT'],
        { timeoutMs: 60_000 },
      );
      return { code: r.code, reply: r.stdout.trim(), error: r.stderr.trim().slice(-300) };
    };
    const answered = (p: SctpProbe) => p.code === 0 && /^b-\d+$/.test(p.reply);
    const apply = async (yaml: string) => {
      let said = '';
      const io = { stdout: (t: string) => (said += t), stderr: (t: string) => (said += t), readStdin: () => yaml };
      if ((await runDatastoreCommand(['apply', '-f', '-'], io, ds)) !== 0) throw new Error(`podroute apply: ${said}`);
    };
    const b = pods.b.ip;
    const open80 = await waitFor(() => sctp(b, 80), {
      what: 'SCTP 80 from a to b, no policy',
      until: answered,
      timeoutMs: SLOW,
      intervalMs: 1000,
    });
    const open81 = await waitFor(() => sctp(b, 81), {
      what: 'SCTP 81 from a to b, no policy',
      until: answered,
      timeoutMs: SLOW,
      intervalMs: 1000,
    });
    say('sctp open');
    await apply(SCTP_POLICY);
    const denied81 = await waitFor(() => sctp(b, 81), {
      what: 'SCTP 81 refused by the policy',
      until: (p) => !answered(p),
      timeoutMs: SLOW,
      intervalMs: 1000,
    });
    const allowed80 = await sctp(b, 80);
    say('sctp policy enforced');
    await apply(SCTP_SERVICE);
    const service = await waitFor(() => sctp(SERVICE_IP, 8080), {
      what: 'SCTP to the Service',
      until: answered,
      timeoutMs: SLOW,
      intervalMs: 1000,
    });
    result.sctp = { open80, open81, denied81, allowed80, service };
    timing('sctp');
    say('sctp service reached');
  } catch (e) {
    result.sctpError = (e as Error).message;
    timing('sctp');
  }

  writeFileSync(join(out, 'result.json'), JSON.stringify(result, null, 2));
  say('done');
} catch (e) {
  for (const n of Object.keys(NODES)) say(`agent ${n}'s log ends:\n${agentLog(n)}`);
  throw e;
} finally {
  await ds.close();
}
process.exit(0); // the agents and Redis go with the VM

interface TunlJson {
  mtu: number;
  flags: string[];
  addr_info: { local: string; prefixlen: number }[];
}

/**
 * `during` with dumpcap on `iface` in `netns` writing `file` (libpcap): started before, stopped
 * once the file stops growing after it (dumpcap drops what is still in its ring when interrupted).
 */
async function capture<T>(netns: string, iface: string, file: string, during: () => Promise<T>, filter = 'not tcp port 179'): Promise<T> {
  const p = spawn('ip', ['netns', 'exec', netns, 'dumpcap', '-i', iface, '-P', '-q', '-w', file, '-f', filter], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  p.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise((r) => p.once('close', r));
  try {
    await waitFor(() => /Capturing on/.test(err) || p.exitCode !== null, {
      what: `dumpcap on ${iface} in ${netns}`,
      timeoutMs: SLOW,
      intervalMs: 100,
    });
    if (p.exitCode !== null) throw new Error(`dumpcap on ${iface} in ${netns} exited: ${err}`);
    const r = await during();
    let last = -1;
    await waitFor(
      () => {
        const n = count(file);
        const still = n === last;
        last = n;
        return still;
      },
      { what: `the capture ${file} to settle`, timeoutMs: 20_000, intervalMs: 1000 },
    ).catch(() => undefined);
    return r;
  } finally {
    p.kill('SIGINT');
    await Promise.race([exited, sleep(10_000)]);
    p.kill('SIGKILL');
  }
}

function count(file: string): number {
  try {
    return readPcap(file, { partial: true }).length;
  } catch {
    return 0;
  }
}
