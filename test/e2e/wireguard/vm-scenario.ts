// Runs inside the kernel VM (compiled to plain JavaScript, felix loaded from dist/): four
// nodes on one segment, a pod on each, felix programming routes and WireGuard in each node's
// namespace. Three nodes encrypt, the fourth does not. The underlay of two nodes is captured
// to OUT_DIR; the steps' results are printed as one JSON line for the test outside to judge.
//
//   node vm-scenario.mjs <dist dir> <out dir>
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

type FelixModule = typeof import('../../../felix/index.js');
type Felix = InstanceType<FelixModule['Felix']>;
type WireguardInput = import('../../../felix/index.js').WireguardInput;
type WireguardPeer = import('../../../felix/index.js').WireguardPeer;

const [dist, outDir] = process.argv.slice(2);
const f: FelixModule = await import(pathToFileURL(join(dist, 'felix/index.js')).href);

const TAG = 'wgvm';
const sh = (argv: string[], input?: string) => {
  const r = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8', input });
  if (r.status !== 0) throw new Error(`${argv.join(' ')}: ${r.stderr}`);
  return r.stdout;
};
const ns = (name: string) => `/var/run/netns/${name}`;
const inNs = (name: string, argv: string[]) => sh(['ip', 'netns', 'exec', name, ...argv]);

interface NodeSetup {
  n: number;
  wireguard: boolean;
  keys: { v4: { privateKey: string; publicKey: string }; v6: { privateKey: string; publicKey: string } };
  felix?: Felix;
}

const node = (n: number) => `${TAG}-n${n}`;
const pod = (n: number) => `${TAG}-p${n}`;
const nodeIp = (n: number) => `10.99.0.${n}`;
const nodeIp6 = (n: number) => `2001:db8:99::${n}`;
const podIp = (n: number) => `10.65.${n}.2`;
const podIp6 = (n: number) => `fd65:0:0:${n}::2`;
const block = (n: number) => `10.65.${n}.0/26`;
const block6 = (n: number) => `fd65:0:0:${n}::/122`;

function makeNode(n: number): void {
  const nd = node(n),
    p = pod(n);
  sh(['ip', 'netns', 'add', nd]);
  sh(['ip', 'netns', 'add', p]);
  sh(['ip', 'link', 'add', `${TAG}-e${n}`, 'netns', nd, 'type', 'veth', 'peer', 'name', `sw${n}`, 'netns', `${TAG}-sw`]);
  sh(['ip', '-n', `${TAG}-sw`, 'link', 'set', `sw${n}`, 'master', 'br0', 'up']);
  sh(['ip', '-n', nd, 'link', 'set', `${TAG}-e${n}`, 'name', 'eth0']);
  sh(['ip', '-n', nd, 'addr', 'add', `${nodeIp(n)}/24`, 'dev', 'eth0']);
  sh(['ip', '-n', nd, 'addr', 'add', `${nodeIp6(n)}/64`, 'dev', 'eth0', 'nodad']);
  sh(['ip', '-n', nd, 'link', 'set', 'eth0', 'up']);
  sh(['ip', '-n', nd, 'link', 'set', 'lo', 'up']);
  // A default route, as a host has: proxy-ARP answers for the pods' 169.254.1.1 only when it is routable.
  sh(['ip', '-n', nd, 'route', 'add', 'default', 'via', '10.99.0.254', 'dev', 'eth0']);
  // The pod: a veth to the node, its default routes through the host end (Calico's 169.254.1.1).
  sh(['ip', 'link', 'add', 'eth0', 'netns', p, 'type', 'veth', 'peer', 'name', `cali${n}`, 'netns', nd]);
  sh(['ip', '-n', nd, 'link', 'set', `cali${n}`, 'up']);
  sh(['ip', '-n', nd, 'addr', 'add', 'fe80::1/64', 'dev', `cali${n}`, 'nodad']);
  sh(['ip', '-n', p, 'link', 'set', 'lo', 'up']);
  sh(['ip', '-n', p, 'link', 'set', 'eth0', 'up']);
  sh(['ip', '-n', p, 'addr', 'add', `${podIp(n)}/32`, 'dev', 'eth0']);
  sh(['ip', '-n', p, 'addr', 'add', `${podIp6(n)}/128`, 'dev', 'eth0', 'nodad']);
  sh(['ip', '-n', p, 'route', 'add', '169.254.1.1', 'dev', 'eth0', 'scope', 'link']);
  sh(['ip', '-n', p, 'route', 'add', 'default', 'via', '169.254.1.1', 'dev', 'eth0']);
  sh(['ip', '-n', p, '-6', 'route', 'add', 'default', 'via', 'fe80::1', 'dev', 'eth0']);
}

function pair() {
  const k = f.generateWireguardKeyPair();
  return { privateKey: k.privateKey, publicKey: k.publicKey };
}

const nodes: NodeSetup[] = [];

function peerOf(o: NodeSetup): WireguardPeer {
  return {
    name: node(o.n),
    addressV4: nodeIp(o.n),
    addressV6: nodeIp6(o.n),
    ...(o.wireguard ? { publicKey: o.keys.v4.publicKey, publicKeyV6: o.keys.v6.publicKey } : {}),
    ...(o.wireguard ? { interfaceAddressV4: `10.65.${o.n}.1`, interfaceAddressV6: `fd65:0:0:${o.n}::1` } : {}),
    blocks: [block(o.n), block6(o.n)],
  };
}

function wireguardInput(me: NodeSetup): WireguardInput | undefined {
  if (!me.wireguard) return undefined;
  return {
    v4: { privateKey: me.keys.v4.privateKey, interfaceAddress: `10.65.${me.n}.1` },
    v6: { privateKey: me.keys.v6.privateKey, interfaceAddress: `fd65:0:0:${me.n}::1` },
    peers: nodes.filter((o) => o !== me).map(peerOf),
  };
}

/** Every felix given the cluster as it now is (the agent does this from the datastore). */
async function pushAll(): Promise<void> {
  for (const me of nodes) {
    const others = nodes.filter((o) => o !== me);
    me.felix?.update({
      remoteRoutes: others.flatMap((o) => [
        { prefix: block(o.n), nextHops: [nodeIp(o.n)] },
        { prefix: block6(o.n), nextHops: [nodeIp6(o.n)] },
      ]),
    });
    me.felix?.setWireguard(wireguardInput(me));
  }
  await Promise.all(nodes.map((n) => n.felix?.settled()));
}

async function startNode(n: number, wireguard: boolean): Promise<NodeSetup> {
  makeNode(n);
  const me: NodeSetup = { n, wireguard, keys: { v4: pair(), v6: pair() } };
  const felix = new f.Felix(new f.LinuxDataplane({ netns: ns(node(n)) }), {
    resyncIntervalMs: 0,
    retryDelayMs: 200,
    wireguardDataplane: new f.NetlinkWireguardDataplane({ netns: ns(node(n)) }),
  });
  felix.update({
    node: { addressV4: `${nodeIp(n)}/24`, addressV6: `${nodeIp6(n)}/64`, uplink: 'eth0' },
    workloads: [{ iface: `cali${n}`, addresses: [podIp(n), podIp6(n)] }],
    ownBlocks: [block(n), block6(n)],
    pools: [{ cidr: '10.65.0.0/16' }, { cidr: 'fd65::/48' }],
  });
  felix.on('report', (r) => {
    if (r.failures.length || r.problems.length || r.devices.some((d) => !d.ok))
      log({ event: 'felix-report', node: n, failures: r.failures, problems: r.problems, devices: r.devices });
    if (r.wireguard)
      log({ event: 'wireguard', node: n, ...r.wireguard, devices: r.wireguard.devices.map((d) => `${d.name}: ${d.detail}`) });
  });
  felix.on('error', (e) => log({ event: 'felix-error', node: n, error: e.message }));
  me.felix = felix;
  nodes.push(me);
  const report = await felix.start();
  const bad = report.failures.length + report.devices.filter((d) => !d.ok).length;
  if (bad) log({ event: 'felix-start-problems', node: n, failures: report.failures, devices: report.devices });
  return me;
}

function ping(from: number, to: string, count = 1, wait = 1): boolean {
  const r = spawnSync('ip', ['netns', 'exec', pod(from), 'ping', '-n', '-q', '-c', String(count), '-W', String(wait), to], {
    encoding: 'utf8',
  });
  return r.status === 0;
}

/** Milliseconds until a ping gets through, or -1 after `limitMs`. */
function reachedWithin(from: number, to: string, limitMs: number): number {
  const t0 = Date.now();
  while (Date.now() - t0 < limitMs) if (ping(from, to, 1, 1)) return Date.now() - t0;
  return -1;
}

const captures: { p: ChildProcess; file: string; name: string; stderr: string[] }[] = [];
/** dumpcap on a node's underlay, into the VM's own /tmp (copied to OUT_DIR at the end). */
async function capture(n: number, name: string): Promise<void> {
  const file = `/tmp/${name}.pcap`;
  const p = spawn('ip', ['netns', 'exec', node(n), 'dumpcap', '-q', '-P', '-i', 'eth0', '-w', file], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const c = { p, file, name, stderr: [] as string[] };
  p.stderr?.setEncoding('utf8').on('data', (d: string) => c.stderr.push(d));
  captures.push(c);
  const t0 = Date.now();
  // dumpcap writes the file's header once the interface is open: nothing sent after is missed.
  // It takes a while to start under an emulated CPU.
  while (!(existsSync(file) && statSync(file).size >= 24)) {
    if (Date.now() - t0 > 180_000) throw new Error(`dumpcap on ${node(n)} did not start: ${c.stderr.join('')}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const results: Record<string, unknown> = {};
function log(x: Record<string, unknown>): void {
  process.stderr.write(`${JSON.stringify(x)}\n`);
}

try {
  sh(['modprobe', 'wireguard']);
  sh(['ip', 'netns', 'add', `${TAG}-sw`]);
  sh(['ip', '-n', `${TAG}-sw`, 'link', 'add', 'br0', 'type', 'bridge']);
  sh(['ip', '-n', `${TAG}-sw`, 'link', 'set', 'br0', 'up']);

  // Two encrypting nodes; the second one's underlay is captured.
  await startNode(1, true);
  await startNode(2, true);
  await pushAll();
  await capture(2, 'n2-eth0');
  results.v4 = ping(1, podIp(2), 3);
  results.v6 = ping(1, podIp6(2), 3);
  results.handshake = inNs(node(1), ['wg', 'show', 'wireguard.cali', 'latest-handshakes']).trim().split(/\s+/)[1] !== '0';
  results.rule = inNs(node(1), ['ip', 'rule', 'show', 'priority', '99']).trim();
  results.table = inNs(node(1), ['ip', 'route', 'show', 'table', '1']).trim();

  // A third node joins: the others learn its key and blocks from the cluster and reach it.
  await startNode(3, true);
  const tJoin = Date.now();
  await pushAll();
  results.joinProgrammedMs = Date.now() - tJoin;
  results.joinReachedMs = reachedWithin(1, podIp(3), 20_000);
  results.joinReachedV6Ms = reachedWithin(1, podIp6(3), 20_000);

  // Node 2 loses its key and makes another: it publishes the new public key, the others follow.
  const n2 = nodes[1];
  n2.keys = { v4: pair(), v6: pair() };
  const tRotate = Date.now();
  await pushAll();
  results.rotateReachedMs = reachedWithin(1, podIp(2), 20_000);
  results.rotateReachedV6Ms = reachedWithin(3, podIp6(2), 20_000);
  results.rotateTotalMs = Date.now() - tRotate;
  results.n1PeersAfterRotate = inNs(node(1), ['wg', 'show', 'wireguard.cali', 'peers']).trim().split('\n').sort();
  results.n2KeysNow = [n2.keys.v4.publicKey, nodes[2].keys.v4.publicKey].sort();

  // A fourth node without WireGuard: reached in clear, and it reaches the others in clear.
  await startNode(4, false);
  await capture(4, 'n4-eth0');
  await pushAll();
  results.clearTo = reachedWithin(1, podIp(4), 20_000);
  results.clearFrom = reachedWithin(4, podIp(2), 20_000);
  results.clearV6 = reachedWithin(4, podIp6(3), 20_000);
  results.n4HasDevice = spawnSync('ip', ['-n', node(4), 'link', 'show', 'wireguard.cali']).status === 0;

  // The cost of one peer change through `wg set` here.
  results.peerChangeMs = {
    netlink: await peerChangeCost(new f.NetlinkWireguardDataplane({ netns: ns(node(1)) }), 20),
    wgTool: await peerChangeCost(new f.WgToolDataplane({ netns: ns(node(1)) }), 5),
  };
  // Traffic between encrypting nodes after all that.
  results.finalV4 = ping(3, podIp(1), 2);
  const report = await nodes[0].felix?.resync();
  results.resyncFailures = report?.failures ?? [];
  results.resyncProblems = report?.problems ?? [];
} catch (e) {
  results.error = (e as Error).stack ?? String(e);
} finally {
  for (const c of captures) c.p.kill('SIGINT');
  await Promise.all(captures.map((c) => new Promise((r) => (c.p.exitCode !== null ? r(null) : c.p.on('exit', r)))));
  for (const c of captures) if (existsSync(c.file)) copyFileSync(c.file, join(outDir, `${c.name}.pcap`));
  for (const n of nodes) n.felix?.stop();
}
process.stdout.write(`RESULT ${JSON.stringify(results)}\n`);

/** Mean milliseconds of one peer change on node 1 (a keepalive flipped) through a dataplane. */
async function peerChangeCost(
  dp: InstanceType<FelixModule['WgToolDataplane']> | InstanceType<FelixModule['NetlinkWireguardDataplane']>,
  times: number,
): Promise<number> {
  const p = ((await dp.listPeers('wireguard.cali')) ?? [])[0];
  const t = performance.now();
  for (let i = 0; i < times; i++)
    await dp.writePeers(
      'wireguard.cali',
      [{ publicKey: p.publicKey, endpoint: p.endpoint ?? '', allowedIps: p.allowedIps, keepAliveSeconds: (i % 2) + 25 }],
      [],
    );
  return (performance.now() - t) / times;
}
