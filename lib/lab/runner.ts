// `podroute lab up|down`: a containerlab topology built with network namespaces. Every node
// is a namespace, every link a veth pair, a `kind: bridge` node a namespace holding a Linux
// bridge; FRR nodes run zebra + bgpd (and bfdd), BIRD nodes run bird, podroute nodes run `podroute node run`, the redis node
// runs the datastore on a Unix socket every namespace can reach (Redis, or with `--datastore etcd`
// a three-member etcd cluster: lib/lab/etcd.ts). `up` reconciles (creates what
// is missing, restarts what died) and `down` removes what the state file lists.
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AgentStatus } from '../agent/index.js';
import { callControl } from '../bgpd/control.js';
import { ensureBird } from './bird.js';
import { containersDown, containersUp, containerVtysh, preflight } from './containers.js';
import { dockerHost } from './docker.js';
import { ensureEtcd, ETCD_MEMBERS, labDatastoreFlag, type LabDatastore } from './etcd.js';
import { labDir, readState, writeState, type LabProcess, type LabState } from './state.js';
import { execCommand, isOurs, linkExists, listNetns, netnsPids, poll, run, startDetached, stopProcess } from './system.js';
import { hostExecLine, hostPath, type Topology, type TopologyNode } from './topology.js';

export const FRR_BIN = '/usr/lib/frr';
const BRIDGE = 'br0';

/** The checkout (or installed package) root, where bin/podroute.js lives. */
export function packageRoot(): string {
  const here = fileURLToPath(new URL('../../', import.meta.url));
  return existsSync(join(here, 'bin/podroute.js')) ? here : join(here, '..');
}

export interface LabOptions {
  /** Folder holding one folder per lab (state.json, logs, sockets). */
  stateRoot: string;
  /** Namespace name prefix; default `clab-<lab>-`, as containerlab names its containers. */
  prefix?: string;
  log?: (line: string) => void;
  /** What the topology's datastore node runs: Redis (default) or a three-member etcd cluster. */
  datastore?: LabDatastore;
  /** How nodes run: network namespaces (default) or containers (lib/lab/containers.ts). */
  runtime?: LabRuntime;
  /** The docker runtime's engine (`docker -H`); default DOCKER_HOST, else the engine's usual socket. */
  dockerHost?: string;
}

export type LabRuntime = 'netns' | 'docker';
export const labRuntime = (state: Pick<LabState, 'runtime'>): LabRuntime => state.runtime ?? 'netns';

/** True when `node` runs a podroute agent (pods go only there). */
export function runsAgent(state: LabState, node: string): boolean {
  if (labRuntime(state) === 'docker') return state.containers?.some((c) => c.node === node && c.role === 'podroute') ?? false;
  return state.processes.some((p) => p.node === node && p.what === 'agent');
}

/** True when `node` runs FRR. */
export function runsFrr(state: LabState, node: string): boolean {
  if (labRuntime(state) === 'docker') return state.containers?.some((c) => c.node === node && c.role === 'frr') ?? false;
  return state.processes.some((p) => p.node === node && p.what === 'bgpd');
}

/** True when `node` runs BIRD. */
export function runsBird(state: LabState, node: string): boolean {
  if (labRuntime(state) === 'docker') return state.containers?.some((c) => c.node === node && c.role === 'bird') ?? false;
  return state.processes.some((p) => p.node === node && p.what === 'bird');
}

export const nsName = (state: Pick<LabState, 'prefix'>, node: string) => `${state.prefix}${node}`;
export const controlSocket = (state: Pick<LabState, 'dir'>, node: string) => join(state.dir, `${node}.sock`);
/** Each node's agent serves CNI calls on its own socket: the nodes of a lab share one host's /run. */
export const cniSocket = (state: Pick<LabState, 'dir'>, node: string) => join(state.dir, `${node}-cni.sock`);
export const frrDir = (state: Pick<LabState, 'dir'>, node: string) => join(state.dir, node, 'frr');

/** Environment for exec lines and `lab exec`: podroute on PATH, pointed at this lab's datastore and the node's agent. */
export function labEnv(state: LabState, node: TopologyNode | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${join(state.dir, 'bin')}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}`,
  };
  if (node) {
    Object.assign(env, node.env);
    env.PODROUTE_CONTROL = controlSocket(state, node.name);
    env.PODROUTE_CNI_SOCKET = cniSocket(state, node.name);
    env.NODENAME = node.name;
  }
  // The lab's own Redis replaces whatever datastore the topology names (a container address here unreachable).
  if (state.redisSocket) env.PODROUTE_REDIS_URL = state.redisSocket;
  if (state.etcdEndpoints) {
    env.PODROUTE_DATASTORE = 'etcd';
    env.PODROUTE_ETCD_ENDPOINTS = state.etcdEndpoints.join(',');
  }
  return env;
}

function writeWrappers(state: LabState): void {
  const bin = join(state.dir, 'bin');
  mkdirSync(bin, { recursive: true });
  const root = packageRoot();
  for (const [name, script] of [
    ['podroute', 'bin/podroute.js'],
    ['podroute-cni', 'bin/podroute-cni.js'],
  ] as const) {
    writeFileSync(join(bin, name), `#!/bin/sh\nexec ${process.execPath} ${join(root, script)} "$@"\n`);
    chmodSync(join(bin, name), 0o755);
  }
}

function alive(state: LabState, node: string, what: string): LabProcess | undefined {
  return state.processes.find((p) => p.node === node && p.what === what && isOurs(p));
}

function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

function start(state: LabState, node: string, what: string, argv: string[], env: NodeJS.ProcessEnv = process.env): LabProcess {
  const log = join(state.dir, `${node}-${what}.log`);
  const full = ['ip', 'netns', 'exec', nsName(state, node), ...argv];
  const started = startDetached(full, log, env, packageRoot());
  const p: LabProcess = { ...started, node, what, argv: full, log };
  state.processes = state.processes.filter((x) => !(x.node === node && x.what === what));
  state.processes.push(p);
  writeState(state);
  return p;
}

async function ensureNamespace(state: LabState, node: string, existing: Set<string>): Promise<boolean> {
  const name = nsName(state, node);
  if (!state.namespaces.some((n) => n.name === name)) {
    if (existing.has(name))
      throw new Error(
        `namespace ${name} exists but this lab did not create it (another lab or a stale run): remove it or use another --prefix`,
      );
    state.namespaces.push({ node, name });
  }
  if (existing.has(name)) return false;
  // Recorded before it exists, so a failure right after still gets it deleted by `down`.
  writeState(state);
  await run(['ip', 'netns', 'add', name]);
  await run(['ip', '-n', name, 'link', 'set', 'lo', 'up']);
  return true;
}

async function ensureLinks(state: LabState, topo: Topology): Promise<void> {
  const role = new Map(topo.nodes.map((n) => [n.name, n.role]));
  for (const [i, link] of topo.links.entries()) {
    const [a, b] = link.endpoints;
    const [nsA, nsB] = [nsName(state, a.node), nsName(state, b.node)];
    const [hasA, hasB] = [await linkExists(a.iface, nsA), await linkExists(b.iface, nsB)];
    if (hasA && hasB) continue;
    // Half a pair (a crash between steps): remove it and build the pair again.
    if (hasA) await run(['ip', '-n', nsA, 'link', 'del', a.iface]);
    if (hasB) await run(['ip', '-n', nsB, 'link', 'del', b.iface]);
    await run(['ip', 'link', 'add', a.iface, 'netns', nsA, 'type', 'veth', 'peer', 'name', b.iface, 'netns', nsB]).catch((e: Error) => {
      throw new Error(`topology.links[${i}]: ${e.message}`);
    });
    for (const [e, ns] of [
      [a, nsA],
      [b, nsB],
    ] as const) {
      if (role.get(e.node) === 'bridge') await run(['ip', '-n', ns, 'link', 'set', e.iface, 'master', BRIDGE]);
      await run(['ip', '-n', ns, 'link', 'set', e.iface, 'up']);
    }
  }
}

async function runExec(state: LabState, node: TopologyNode): Promise<void> {
  for (const [i, line] of node.exec.entries()) {
    const cmd = hostExecLine(node, line);
    const r = await execCommand(['ip', 'netns', 'exec', nsName(state, node.name), 'sh', '-c', cmd], {
      env: labEnv(state, node),
      timeoutMs: 60_000,
    });
    if (r.code !== 0)
      throw new Error(`topology.nodes.${node.name}.exec[${i}]: \`${line}\` exited ${r.code}: ${(r.stderr || r.stdout).trim()}`);
  }
}

async function ensureRedis(state: LabState, node: TopologyNode): Promise<void> {
  const sock = join(state.dir, 'redis.sock');
  state.redisSocket = sock;
  if (alive(state, node.name, 'redis')) return;
  const data = join(state.dir, 'redis');
  mkdirSync(data, { recursive: true });
  rmSync(sock, { force: true });
  const p = start(state, node.name, 'redis', [
    'redis-server',
    '--port',
    '0',
    '--unixsocket',
    sock,
    '--unixsocketperm',
    '770',
    // AOF, fsync once a second: a crash loses at most about a second of writes (see lib/datastore/README.md).
    '--appendonly',
    'yes',
    '--appendfsync',
    'everysec',
    '--dir',
    data,
  ]);
  await poll(
    `redis on ${sock}`,
    async () => {
      if (!isOurs(p)) throw new Error(`redis-server exited: ${tail(p.log)}`);
      return (await execCommand(['redis-cli', '-s', sock, 'ping'], { timeoutMs: 2_000 })).stdout.trim() === 'PONG' ? true : undefined;
    },
    15_000,
  );
}

function frrIds(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('frr:'));
  if (!line) throw new Error('FRR is not installed (no user frr): apt-get install frr');
  const f = line.split(':');
  return { uid: Number(f[2]), gid: Number(f[3]) };
}

export async function vtysh(state: LabState, node: string, ...commands: string[]): Promise<string> {
  if (labRuntime(state) === 'docker') return containerVtysh(state, node, commands);
  return run(['vtysh', '--vty_socket', frrDir(state, node), ...commands.flatMap((c) => ['-c', c])], { timeoutMs: 10_000 });
}

/** Whether the node's bound daemons file (`/etc/frr/daemons`) turns bfdd on, as FRR's init script reads it. */
export function wantsBfdd(node: TopologyNode): boolean {
  const daemons = hostPath(node, '/etc/frr/daemons');
  return daemons !== undefined && /^bfdd=yes\s*$/m.test(readFileSync(daemons, 'utf8'));
}

async function ensureFrr(state: LabState, node: TopologyNode): Promise<void> {
  const dir = frrDir(state, node.name);
  const zserv = join(dir, 'zserv.api');
  const common = ['--vty_socket', dir, '-P', '0', '-u', 'frr', '-g', 'frr', '-z', zserv];
  const zebraUp = alive(state, node.name, 'zebra');
  const bgpdUp = alive(state, node.name, 'bgpd');
  const bfdd = wantsBfdd(node);
  const bfddUp = alive(state, node.name, 'bfdd');
  if (zebraUp && bgpdUp && (!bfdd || bfddUp)) return;
  const conf = hostPath(node, '/etc/frr/frr.conf');
  if (!conf) throw new Error(`topology.nodes.${node.name}.binds: an FRR node needs a file bound to /etc/frr/frr.conf`);
  mkdirSync(dir, { recursive: true });
  // FRR drops to user frr: every folder down to its instance folder must let it through.
  for (const d of [dirname(state.dir), state.dir, dirname(dir)]) chmodSync(d, statSync(d).mode | 0o111);
  const ids = frrIds();
  const bgpdConf = join(dir, 'bgpd.conf');
  const zebraConf = join(dir, 'zebra.conf');
  copyFileSync(conf, bgpdConf);
  writeFileSync(zebraConf, `hostname ${node.name}\nlog stdout informational\n`);
  for (const f of [dir, bgpdConf, zebraConf]) chownSync(f, ids.uid, ids.gid);
  await run([`${FRR_BIN}/bgpd`, '-C', '-Z', '-f', bgpdConf]).catch((e: Error) => {
    throw new Error(`topology.nodes.${node.name}.binds: bgpd rejected ${conf}: ${e.message}`);
  });
  if (!zebraUp) {
    // bgpd (and bfdd) without their zebra would never install a route nor see an interface: restart them all.
    for (const what of ['bgpd', 'bfdd']) {
      const old = state.processes.find((p) => p.node === node.name && p.what === what);
      if (old) await stopProcess(old);
    }
    rmSync(zserv, { force: true });
    const z = start(state, node.name, 'zebra', [`${FRR_BIN}/zebra`, '-f', zebraConf, '-i', join(dir, 'zebra.pid'), ...common]);
    await poll(
      `zebra of ${node.name}`,
      () => {
        if (!isOurs(z)) throw new Error(`zebra exited: ${tail(z.log)}`);
        return existsSync(zserv) ? true : undefined;
      },
      15_000,
      50,
    );
  }
  if (bfdd && !(zebraUp && bfddUp)) {
    // The same frr.conf: bfdd takes its `bfd` block and skips the rest, as each daemon does with an integrated config.
    const bfddConf = join(dir, 'bfdd.conf');
    copyFileSync(conf, bfddConf);
    chownSync(bfddConf, ids.uid, ids.gid);
    const bfdctl = join(dir, 'bfdd.sock');
    rmSync(bfdctl, { force: true });
    const f = start(state, node.name, 'bfdd', [
      `${FRR_BIN}/bfdd`,
      '-f',
      bfddConf,
      '-i',
      join(dir, 'bfdd.pid'),
      '--bfdctl',
      bfdctl,
      ...common,
    ]);
    await poll(
      `bfdd of ${node.name}`,
      () => {
        if (!isOurs(f)) throw new Error(`bfdd exited: ${tail(f.log)}`);
        return existsSync(bfdctl) ? true : undefined;
      },
      15_000,
      50,
    );
  }
  if (zebraUp && bgpdUp) return;
  const b = start(state, node.name, 'bgpd', [`${FRR_BIN}/bgpd`, '-f', bgpdConf, '-i', join(dir, 'bgpd.pid'), ...common]);
  await poll(
    `bgpd of ${node.name} answering vtysh`,
    async () => {
      if (!isOurs(b)) throw new Error(`bgpd exited: ${tail(b.log)}`);
      return (await vtysh(state, node.name, 'show bgp summary json')).length > 0 ? true : undefined;
    },
    15_000,
  );
}

async function ensureAgent(state: LabState, node: TopologyNode): Promise<void> {
  const control = controlSocket(state, node.name);
  if (!alive(state, node.name, 'agent')) {
    const conf = hostPath(node, '/etc/podroute/node.yaml');
    if (!conf) throw new Error(`topology.nodes.${node.name}.binds: a podroute node needs its config bound to /etc/podroute/node.yaml`);
    rmSync(control, { force: true });
    const argv = [process.execPath, join(packageRoot(), 'bin/podroute.js'), 'node', 'run', '--config', conf, '--control', control];
    const datastore = labDatastoreFlag(state);
    if (datastore) argv.push('--datastore', datastore);
    start(state, node.name, 'agent', argv, labEnv(state, node));
  }
  const p = alive(state, node.name, 'agent') ?? state.processes.find((x) => x.node === node.name && x.what === 'agent')!;
  await poll(
    `agent ${node.name} ready`,
    async () => {
      if (!isOurs(p)) throw new Error(`agent exited: ${tail(p.log)}`);
      return (await callControl<AgentStatus>(control, 'GET', '/status')).ready ? true : undefined;
    },
    60_000,
    200,
  );
}

function freshState(topo: Topology, options: LabOptions): LabState {
  return {
    name: topo.name,
    ...(options.runtime === 'docker' ? { runtime: 'docker' as const, dockerHost: dockerHost(options.dockerHost) } : {}),
    topology: topo.file,
    prefix: options.prefix ?? `clab-${topo.name}-`,
    dir: labDir(options.stateRoot, topo.name),
    namespaces: [],
    processes: [],
    pods: [],
  };
}

/** Builds (or repairs) the lab; returns its state. Safe to run again on a lab that is up. */
export async function labUp(topo: Topology, options: LabOptions): Promise<LabState> {
  const log = options.log ?? (() => undefined);
  const state = readState(options.stateRoot, topo.name) ?? freshState(topo, options);
  if (options.prefix !== undefined && options.prefix !== state.prefix) {
    throw new Error(`lab ${topo.name} is already up with prefix ${JSON.stringify(state.prefix)}: run podroute lab down first`);
  }
  if (state.topology !== topo.file)
    throw new Error(`a lab named ${topo.name} is already up from ${state.topology}: run podroute lab down ${topo.name} first`);
  const runtime = options.runtime ?? labRuntime(state);
  if (runtime !== labRuntime(state))
    throw new Error(`lab ${topo.name} is already up with --runtime ${labRuntime(state)}: run podroute lab down ${topo.name} first`);
  if (runtime === 'docker') {
    if (options.datastore === 'etcd') throw new Error('--datastore etcd: the docker runtime runs the datastore node as a Redis container');
    await preflight(state, topo);
  }
  mkdirSync(state.dir, { recursive: true });
  writeState(state);
  if (runtime === 'docker') {
    await containersUp(topo, state, log);
    writeState(state);
    return state;
  }
  writeWrappers(state);
  const existing = await listNetns();
  const fresh = new Set<string>();
  for (const node of topo.nodes) {
    if (await ensureNamespace(state, node.name, existing)) {
      fresh.add(node.name);
      if (node.role === 'bridge') {
        await run(['ip', '-n', nsName(state, node.name), 'link', 'add', BRIDGE, 'type', 'bridge']);
        await run(['ip', '-n', nsName(state, node.name), 'link', 'set', BRIDGE, 'up']);
      }
      log(`namespace ${nsName(state, node.name)} (${node.role})`);
    }
  }
  const datastore = options.datastore ?? (state.etcdEndpoints ? 'etcd' : 'redis');
  if ((datastore === 'etcd' && state.redisSocket) || (datastore === 'redis' && state.etcdEndpoints))
    throw new Error(
      `lab ${topo.name} is already up with ${state.redisSocket ? 'redis' : 'etcd'}: run podroute lab down ${topo.name} first`,
    );
  for (const node of topo.nodes.filter((n) => n.role === 'redis')) {
    if (datastore === 'etcd') {
      await ensureEtcd(state, node, { start: (st, n, what, argv) => start(st, n, what, argv), alive, tail });
      log(`etcd ${node.name}: ${ETCD_MEMBERS} members, ${state.etcdEndpoints!.join(',')}`);
      continue;
    }
    await ensureRedis(state, node);
    log(`redis ${node.name}: ${state.redisSocket}`);
  }
  await ensureLinks(state, topo);
  // exec lines configure a node once, when its namespace is new (containerlab runs them at deploy).
  for (const node of topo.nodes)
    if (fresh.has(node.name) && node.exec.length) {
      await runExec(state, node);
      log(`exec ${node.name}: ${node.exec.length} line(s)`);
    }
  // The routers are independent of each other: started at once.
  await Promise.all([
    ...topo.nodes
      .filter((n) => n.role === 'frr')
      .map(async (node) => {
        await ensureFrr(state, node);
        log(`frr ${node.name}: zebra, ${wantsBfdd(node) ? 'bfdd, ' : ''}bgpd`);
      }),
    ...topo.nodes
      .filter((n) => n.role === 'bird')
      .map(async (node) => {
        await ensureBird(state, node, { start: (st, n, what, argv) => start(st, n, what, argv), alive, tail });
        log(`bird ${node.name}`);
      }),
  ]);
  await Promise.all(
    topo.nodes
      .filter((n) => n.role === 'podroute')
      .map(async (node) => {
        await ensureAgent(state, node);
        log(`agent ${node.name}: ready`);
      }),
  );
  writeState(state);
  return state;
}

/**
 * Starts the named podroute nodes' agents again where they are not running, and waits until they
 * are ready; nothing else of the lab is touched (a dead agent elsewhere stays dead). Returns the
 * lab's state.
 */
export async function labRestartAgents(topo: Topology, options: LabOptions, nodes: readonly string[]): Promise<LabState> {
  const state = readState(options.stateRoot, topo.name);
  if (!state) throw new Error(`lab ${topo.name} is not up`);
  if (labRuntime(state) === 'docker') throw new Error('restarting single agents is for labs in network namespaces');
  const picked = nodes.map((name) => {
    const n = topo.nodes.find((x) => x.name === name && x.role === 'podroute');
    if (!n) throw new Error(`${name} is not a podroute node of lab ${topo.name}`);
    return n;
  });
  // One state for all: each start records its process in it.
  await Promise.all(picked.map((n) => ensureAgent(state, n)));
  writeState(state);
  return state;
}

/** Removes everything the state file lists: processes by PID, then namespaces by name, then the lab folder. */
export async function labDown(
  name: string,
  options: LabOptions,
): Promise<{ processes: number; namespaces: number; containers?: number; links?: number } | undefined> {
  const state = readState(options.stateRoot, name);
  if (!state) return undefined;
  if (labRuntime(state) === 'docker') {
    const gone = await containersDown(state);
    const existing = await listNetns();
    let deleted = 0;
    for (const pod of state.pods)
      if (existing.has(pod.namespace)) {
        await run(['ip', 'netns', 'del', pod.namespace]);
        deleted++;
      }
    rmSync(state.dir, { recursive: true, force: true });
    return { processes: 0, containers: gone.containers, links: gone.links, namespaces: deleted };
  }
  const order = ['agent', 'bgpd', 'bfdd', 'bird', 'zebra', 'redis'];
  // The datastore last (etcd members rank as redis): agents first, so none is left writing to it.
  const rank = (what: string): number => order.indexOf(what.startsWith('etcd-') ? 'redis' : what);
  let stopped = 0;
  // One rank at a time, its processes at once (each may take its grace time to exit).
  for (const r of [...new Set(state.processes.map((p) => rank(p.what)))].sort((a, b) => a - b)) {
    const group = state.processes.filter((p) => rank(p.what) === r);
    stopped += group.filter((p) => isOurs(p)).length;
    await Promise.all(group.map((p) => stopProcess(p)));
  }
  const nss = [...state.pods.map((p) => p.namespace), ...state.namespaces.map((n) => n.name)];
  const existing = await listNetns();
  let deleted = 0;
  for (const ns of nss) {
    if (!existing.has(ns)) continue;
    // Anything still running inside a namespace this lab made was started there by the lab (an exec line's daemon).
    for (const pid of await netnsPids(ns)) {
      try {
        process.kill(pid, 'SIGKILL');
        stopped++;
      } catch {
        /* gone */
      }
    }
    await run(['ip', 'netns', 'del', ns]);
    deleted++;
  }
  rmSync(state.dir, { recursive: true, force: true });
  return { processes: stopped, namespaces: deleted };
}
