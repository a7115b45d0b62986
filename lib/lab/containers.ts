// `podroute lab up --runtime docker`: the topology's nodes as containers, its links wired as
// containerlab wires them. Each `kind: linux` node is a container `clab-<lab>-<node>` from its
// image (`--network none`, privileged, its env, binds and exec lines); every link is a veth
// pair whose ends carry the endpoints' names inside the nodes' network namespaces; a
// `kind: bridge` node is a Linux bridge in the host, and its ends of the links are its ports.
//
// A node's network namespace is held by a second, idle container (`<container>.netns`) that the
// node container joins, as Kubernetes holds a pod's in its pause container: the node container
// can then be stopped and started (an agent's graceful restart) and find its links, addresses,
// kernel routes and its pods' interfaces where it left them. `/run/netns/<container>` names
// the namespace on the host, as containerlab does, so `ip -n` reaches it.
//
// The lab folder is bound into every container at its own path: the datastore's Unix socket
// and the agents' control sockets have one name on the host and in every container. Pods'
// network namespaces are made on the host (`ip netns add`); /run/netns is bound into the node
// containers as a slave mount, so a pod's namespace made after the container started is there
// for the CNI plugin, which runs inside the node container as a runtime runs it.
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentStatus } from '../agent/index.js';
import { callControl } from '../bgpd/control.js';
import { birdc } from './bird.js';
import { docker, dockerArgv, dockerHost, dockerResult, engineAnswers, imageExists, inspectContainer } from './docker.js';
import { cniSocket, controlSocket, nsName } from './runner.js';
import { writeState, type LabContainer, type LabState } from './state.js';
import { execCommand, linkExists, poll, run } from './system.js';
import type { Topology, TopologyNode } from './topology.js';

const NETNS_DIR = '/run/netns';
/** Where the datastore node's Redis keeps its append-only file, inside the lab folder. */
const REDIS_DIR = 'redis';

export const holderName = (state: Pick<LabState, 'prefix'>, node: string) => `${nsName(state, node)}.netns`;
export const containerOf = (state: LabState, node: string): LabContainer | undefined => state.containers?.find((c) => c.node === node);

/**
 * A host interface's name: the topology's own (a bridge is named as its node, a bridge port as
 * its endpoint, as containerlab has them) when the lab has containerlab's names; with another
 * --prefix, short names under that prefix, so two copies of a lab never meet in the host.
 */
function hostIfName(state: LabState, kind: 'b' | 'v', index: number, natural: string): string {
  if (state.prefix === `clab-${state.name}-`) return natural;
  const suffix = `${kind}${index}`;
  return `${state.prefix.slice(0, 15 - suffix.length)}${suffix}`;
}

/** New mounts under /run/netns reach containers that bind it only if it is a shared mount point (`ip netns add` makes it one). */
async function ensureSharedNetnsDir(): Promise<void> {
  mkdirSync(NETNS_DIR, { recursive: true });
  const prop = await execCommand(['findmnt', '-n', '-o', 'PROPAGATION', '--mountpoint', NETNS_DIR]);
  if (prop.code === 0 && prop.stdout.includes('shared')) return;
  if (prop.code !== 0) await run(['mount', '--bind', NETNS_DIR, NETNS_DIR]);
  await run(['mount', '--make-shared', NETNS_DIR]);
}

/**
 * Before anything is made: the engine answers, holds every image the topology names, and has
 * no container under a name this lab would take that the lab did not make.
 */
export async function preflight(state: LabState, topo: Topology): Promise<void> {
  const host = state.dockerHost!;
  if (!(await engineAnswers(host)))
    throw new Error(
      `--runtime docker: no container engine answers on ${host} (start dockerd, or name it with --docker-host or DOCKER_HOST)`,
    );
  for (const node of topo.nodes) {
    if (node.kind !== 'linux') continue;
    if (!(await imageExists(host, node.image!)))
      throw new Error(
        `topology.nodes.${node.name}.image: ${node.image} is not in the engine on ${host} (containerlab/build-images.sh builds ours)`,
      );
  }
  for (const node of topo.nodes.filter((n) => n.kind === 'linux'))
    if (!containerOf(state, node.name))
      for (const name of [nsName(state, node.name), holderName(state, node.name)])
        if (await inspectContainer(host, name))
          throw new Error(
            `container ${name} exists but this lab did not create it (another lab or a stale run): remove it or use another --prefix`,
          );
}

/** A link end inside a node: recorded names, so `down` and a repair find them. */
async function ensureBridges(state: LabState, topo: Topology, log: (l: string) => void): Promise<void> {
  state.bridges ??= [];
  for (const [i, node] of topo.nodes.filter((n) => n.kind === 'bridge').entries()) {
    let bridge = state.bridges.find((b) => b.node === node.name);
    if (!bridge) {
      const name = hostIfName(state, 'b', i, node.name);
      if (await linkExists(name))
        throw new Error(
          `topology.nodes.${node.name}: the host already has an interface ${name} that this lab did not make (remove it or use another --prefix)`,
        );
      bridge = { node: node.name, name };
      state.bridges.push(bridge);
      writeState(state);
    }
    if (await linkExists(bridge.name)) continue;
    await run(['ip', 'link', 'add', bridge.name, 'type', 'bridge']);
    await run(['ip', 'link', 'set', bridge.name, 'up']);
    log(`bridge ${bridge.name} (${node.name})`);
  }
}

const bridgeOf = (state: LabState, node: string) => state.bridges?.find((b) => b.node === node)?.name;

function netnsTarget(name: string): string | undefined {
  try {
    return lstatSync(join(NETNS_DIR, name)).isSymbolicLink() ? readlinkSync(join(NETNS_DIR, name)) : undefined;
  } catch {
    return undefined;
  }
}

/** The holder container of a node; true when it (and so the node's network namespace) is new. */
async function ensureHolder(state: LabState, node: TopologyNode): Promise<boolean> {
  const host = state.dockerHost!;
  const name = holderName(state, node.name);
  const ns = nsName(state, node.name);
  let fresh = false;
  let info = await inspectContainer(host, name);
  if (info && !info.running) {
    await docker(host, ['rm', '-f', name]);
    info = undefined;
  }
  if (!info) {
    if (existsSync(join(NETNS_DIR, ns)) && netnsTarget(ns) === undefined)
      throw new Error(
        `namespace ${ns} exists in the host and is not this lab's (another lab or a stale run): remove it or use another --prefix`,
      );
    // sleep as PID 1 ignores SIGTERM: `down` removes the holder with SIGKILL (rm -f).
    await docker(host, [
      'run',
      '-d',
      '--name',
      name,
      '--hostname',
      node.name,
      '--network',
      'none',
      // Docker turns IPv6 off in a namespace it gives no IPv6 network; containerlab turns it back on (dual-stack labs).
      '--sysctl',
      'net.ipv6.conf.all.disable_ipv6=0',
      '--sysctl',
      'net.ipv6.conf.default.disable_ipv6=0',
      '--label',
      `podroute.lab=${state.name}`,
      '--entrypoint',
      'sleep',
      node.image!,
      'infinity',
    ]);
    info = (await inspectContainer(host, name))!;
    fresh = true;
  }
  const target = `/proc/${info.pid}/ns/net`;
  if (netnsTarget(ns) !== target) {
    rmSync(join(NETNS_DIR, ns), { force: true });
    symlinkSync(target, join(NETNS_DIR, ns));
  }
  if (!state.namespaces.some((n) => n.node === node.name)) state.namespaces.push({ node: node.name, name: ns });
  return fresh;
}

/** Every link as a veth pair; an end on a bridge node is a port of that host bridge. */
async function ensureLinks(state: LabState, topo: Topology): Promise<void> {
  const kind = new Map(topo.nodes.map((n) => [n.name, n.kind]));
  state.hostLinks ??= [];
  for (const [i, link] of topo.links.entries()) {
    const ends = link.endpoints.map((e) => {
      if (kind.get(e.node) !== 'bridge') return { ...e, ns: nsName(state, e.node) as string | undefined, ifname: e.iface };
      const id = `${e.node}:${e.iface}`;
      let rec = state.hostLinks!.find((h) => h.endpoint === id);
      if (!rec) {
        rec = { endpoint: id, name: hostIfName(state, 'v', i, e.iface) };
        state.hostLinks!.push(rec);
      }
      return { ...e, ns: undefined, ifname: rec.name };
    });
    writeState(state);
    const present = await Promise.all(ends.map((e) => linkExists(e.ifname, e.ns)));
    if (present.every(Boolean)) continue;
    // Half a pair (a node's namespace made again, a crash between steps): remove the rest and make it again.
    for (const [j, e] of ends.entries())
      if (present[j]) await run(e.ns ? ['ip', '-n', e.ns, 'link', 'del', e.ifname] : ['ip', 'link', 'del', e.ifname]);
    const [a, b] = ends as [(typeof ends)[0], (typeof ends)[0]];
    const side = (e: typeof a) => (e.ns ? [e.ifname, 'netns', e.ns] : [e.ifname]);
    await run(['ip', 'link', 'add', ...side(a), 'type', 'veth', 'peer', 'name', ...side(b)]).catch((err: Error) => {
      throw new Error(`topology.links[${i}]: ${err.message}`);
    });
    for (const e of ends) {
      if (e.ns) await run(['ip', '-n', e.ns, 'link', 'set', e.ifname, 'up']);
      else {
        await run(['ip', 'link', 'set', e.ifname, 'master', bridgeOf(state, e.node)!]);
        await run(['ip', 'link', 'set', e.ifname, 'up']);
      }
    }
  }
}

/** What every container of the lab is given besides the topology's own: the lab's datastore and the node's control socket. */
function labContainerEnv(state: LabState, node: TopologyNode): Record<string, string> {
  const env: Record<string, string> = {
    ...node.env,
    NODENAME: node.name,
    PODROUTE_CONTROL: controlSocket(state, node.name),
    PODROUTE_CNI_SOCKET: cniSocket(state, node.name),
  };
  // No management network: the lab's Redis is reached on its socket, whatever address the topology names.
  if (state.redisSocket) env.PODROUTE_REDIS_URL = state.redisSocket;
  return env;
}

// Linux capability numbers (linux/capability.h), as docker names them.
const CAPS = (
  'CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE NET_BIND_SERVICE ' +
  'NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN ' +
  'SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE ' +
  'MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF CHECKPOINT_RESTORE'
).split(' ');

/**
 * containerlab runs linux nodes privileged. Where the runner itself lacks a capability (a host
 * that is itself a container), --privileged cannot start: the same, minus what we lack.
 */
function privilegeArgs(): string[] {
  const line = readFileSync('/proc/self/status', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('CapBnd:'));
  const bounding = line ? BigInt(`0x${line.split(/\s+/)[1]}`) : 0n;
  const missing = CAPS.filter((_, i) => (bounding & (1n << BigInt(i))) === 0n);
  if (missing.length === 0) return ['--privileged'];
  return [
    '--cap-add',
    'ALL',
    ...missing.flatMap((c) => ['--cap-drop', c]),
    // What --privileged also lifts: /proc/sys writable (exec lines run sysctl -w), no seccomp or AppArmor filter.
    '--security-opt',
    'systempaths=unconfined',
    '--security-opt',
    'seccomp=unconfined',
    '--security-opt',
    'apparmor=unconfined',
  ];
}

function createArgs(state: LabState, node: TopologyNode, c: LabContainer): string[] {
  const args = [
    'create',
    '--name',
    c.name,
    '--network',
    `container:${c.holder}`,
    ...privilegeArgs(),
    '--label',
    `podroute.lab=${state.name}`,
  ];
  for (const [k, v] of Object.entries(labContainerEnv(state, node))) args.push('-e', `${k}=${v}`);
  for (const b of node.binds) args.push('-v', `${b.source}:${b.target}${b.readOnly ? ':ro' : ''}`);
  args.push('-v', `${state.dir}:${state.dir}`);
  if (node.role === 'podroute') args.push('-v', `${NETNS_DIR}:${NETNS_DIR}:rslave`);
  if (node.role === 'redis') {
    // AOF, fsync once a second: a crash loses at most about a second of writes (see lib/datastore/README.md).
    args.push('--user', '0', '--entrypoint', 'redis-server', node.image!);
    args.push('--port', '0', '--unixsocket', state.redisSocket!, '--unixsocketperm', '777');
    args.push('--appendonly', 'yes', '--appendfsync', 'everysec', '--dir', join(state.dir, REDIS_DIR));
  } else args.push(node.image!);
  return args;
}

/** The node's container, created when its holder is new (it joins that namespace) and started when it is not running. */
async function ensureNodeContainer(state: LabState, node: TopologyNode, freshNetns: boolean): Promise<boolean> {
  const host = state.dockerHost!;
  const c: LabContainer = { node: node.name, name: nsName(state, node.name), holder: holderName(state, node.name), role: node.role };
  state.containers = [...(state.containers ?? []).filter((x) => x.node !== node.name), c];
  writeState(state);
  let info = await inspectContainer(host, c.name);
  if (info && freshNetns) {
    // It joined a namespace that is gone.
    await docker(host, ['rm', '-f', c.name]);
    info = undefined;
  }
  if (info?.running) return false;
  if (!info) await docker(host, createArgs(state, node, c));
  await docker(host, ['start', c.name]);
  return true;
}

/** containerlab runs a node's exec lines once, after its links are wired: here when its namespace is new. */
async function runExec(state: LabState, node: TopologyNode): Promise<void> {
  for (const [i, line] of node.exec.entries()) {
    const r = await dockerResult(state.dockerHost!, ['exec', nsName(state, node.name), 'sh', '-c', line], { timeoutMs: 60_000 });
    if (r.code !== 0)
      throw new Error(`topology.nodes.${node.name}.exec[${i}]: \`${line}\` exited ${r.code}: ${(r.stderr || r.stdout).trim()}`);
  }
}

async function containerLogs(state: LabState, name: string): Promise<string> {
  const r = await dockerResult(state.dockerHost!, ['logs', '--tail', '15', name], { timeoutMs: 10_000 });
  return (r.stdout + r.stderr).trim() || '(no log)';
}

/** Fails fast, with the container's log, when the node's container stopped while we wait for it. */
async function mustRun(state: LabState, node: string): Promise<void> {
  const info = await inspectContainer(state.dockerHost!, nsName(state, node));
  if (!info?.running) throw new Error(`container ${nsName(state, node)} exited: ${await containerLogs(state, nsName(state, node))}`);
}

/** vtysh inside an FRR node's container. */
export function containerVtysh(state: LabState, node: string, commands: string[]): Promise<string> {
  return docker(state.dockerHost!, ['exec', nsName(state, node), 'vtysh', ...commands.flatMap((c) => ['-c', c])], { timeoutMs: 10_000 });
}

async function waitReady(state: LabState, node: TopologyNode): Promise<void> {
  if (node.role === 'redis')
    await poll(
      `redis of ${node.name} on ${state.redisSocket}`,
      async () => {
        await mustRun(state, node.name);
        const r = await dockerResult(state.dockerHost!, ['exec', nsName(state, node.name), 'redis-cli', '-s', state.redisSocket!, 'ping'], {
          timeoutMs: 5_000,
        });
        return r.stdout.trim() === 'PONG' ? true : undefined;
      },
      30_000,
      200,
    );
  if (node.role === 'frr')
    await poll(
      `FRR of ${node.name} answering vtysh`,
      async () => {
        await mustRun(state, node.name);
        return (await containerVtysh(state, node.name, ['show bgp summary json'])).length > 0 ? true : undefined;
      },
      30_000,
      250,
    );
  if (node.role === 'bird')
    await poll(
      `BIRD of ${node.name} answering birdc`,
      async () => {
        await mustRun(state, node.name);
        return (await birdc(state, node.name, 'show status')).includes('Daemon is up') ? true : undefined;
      },
      30_000,
      250,
    );
  if (node.role === 'podroute')
    await poll(
      `agent ${node.name} ready`,
      async () => {
        await mustRun(state, node.name);
        return (await callControl<AgentStatus>(controlSocket(state, node.name), 'GET', '/status')).ready ? true : undefined;
      },
      90_000,
      250,
    );
}

/** Builds (or repairs) a lab in containers; `state` is the lab's, already written. */
export async function containersUp(topo: Topology, state: LabState, log: (l: string) => void): Promise<void> {
  state.dockerHost ??= dockerHost();
  const linux = topo.nodes.filter((n) => n.kind === 'linux');
  await ensureSharedNetnsDir();
  await ensureBridges(state, topo, log);
  if (linux.some((n) => n.role === 'redis')) {
    state.redisSocket = join(state.dir, 'redis.sock');
    mkdirSync(join(state.dir, REDIS_DIR), { recursive: true });
  }
  const fresh = new Set<string>();
  for (const node of linux) {
    // Recorded before it exists, so a failure right after still gets it removed by `down`.
    state.containers = [
      ...(state.containers ?? []).filter((x) => x.node !== node.name),
      { node: node.name, name: nsName(state, node.name), holder: holderName(state, node.name), role: node.role },
    ];
    writeState(state);
    if (await ensureHolder(state, node)) {
      fresh.add(node.name);
      log(`namespace ${nsName(state, node.name)} (${node.role}, held by ${holderName(state, node.name)})`);
    }
  }
  writeState(state);
  await ensureLinks(state, topo);
  // The datastore first: exec lines (podroute apply) and agents need it.
  const order = [...linux].sort((a, b) => Number(b.role === 'redis') - Number(a.role === 'redis'));
  for (const node of order) {
    if (await ensureNodeContainer(state, node, fresh.has(node.name))) log(`container ${nsName(state, node.name)} (${node.image})`);
    if (node.role === 'redis') await waitReady(state, node);
  }
  for (const node of order)
    if (fresh.has(node.name) && node.exec.length) {
      await runExec(state, node);
      log(`exec ${node.name}: ${node.exec.length} line(s)`);
    }
  await Promise.all(
    order
      .filter((n) => n.role === 'frr' || n.role === 'bird' || n.role === 'podroute')
      .map(async (node) => {
        await waitReady(state, node);
        log(`${node.role === 'podroute' ? 'agent' : node.role} ${node.name}: ready`);
      }),
  );
}

const DOWN_ORDER = ['podroute', 'frr', 'bird', 'linux', 'redis'];

/** Removes the lab's containers (agents first, the datastore last), its node namespace names, host links and bridges. */
export async function containersDown(state: LabState): Promise<{ containers: number; links: number }> {
  const host = state.dockerHost ?? dockerHost();
  let containers = 0;
  const byRole = [...(state.containers ?? [])].sort((a, b) => DOWN_ORDER.indexOf(a.role) - DOWN_ORDER.indexOf(b.role));
  for (const c of byRole)
    for (const name of [c.name, c.holder]) {
      const r = await dockerResult(host, ['rm', '-f', '-v', name], { timeoutMs: 60_000 });
      if (r.code === 0) containers++;
      else if (!/no such container/i.test(r.stderr)) throw new Error(`docker rm ${name}: ${r.stderr.trim()}`);
    }
  for (const n of state.namespaces) if (netnsTarget(n.name) !== undefined) rmSync(join(NETNS_DIR, n.name), { force: true });
  let links = 0;
  // A bridge port goes with its peer's namespace; one whose peer never came is removed here.
  for (const name of [...(state.hostLinks ?? []), ...(state.bridges ?? [])].map((l) => l.name)) {
    if (!(await linkExists(name))) continue;
    const r = await execCommand(['ip', 'link', 'del', name]);
    // The kernel removes a pair whose peer's namespace went with its container a moment later: gone is done.
    if (r.code === 0) links++;
    else if (await linkExists(name)) throw new Error(`ip link del ${name}: ${r.stderr.trim()}`);
  }
  return { containers, links };
}

/** argv for a command in a node's container (`lab exec`), with the lab's environment. */
export function containerExecArgv(state: LabState, node: string, command: string[], tty: boolean): string[] {
  return dockerArgv(state.dockerHost!, ['exec', '-i', ...(tty ? ['-t'] : []), nsName(state, node), ...command]);
}

/** The CNI plugin run inside a node's container, as a runtime runs it there. */
export function containerCni(
  state: LabState,
  node: string,
  env: Record<string, string>,
  netconf: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const e = Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
  return dockerResult(state.dockerHost!, ['exec', '-i', ...e, nsName(state, node), '/opt/cni/bin/podroute-cni'], {
    input: netconf,
    timeoutMs: 60_000,
  });
}

/** Each node's container: present, running, its PID. */
export async function containerStates(state: LabState): Promise<Map<string, { present: boolean; running: boolean; pid: number }>> {
  const out = new Map<string, { present: boolean; running: boolean; pid: number }>();
  await Promise.all(
    (state.containers ?? []).map(async (c) => {
      const info = await inspectContainer(state.dockerHost!, c.name).catch(() => undefined);
      out.set(c.node, { present: info !== undefined, running: info?.running ?? false, pid: info?.pid ?? 0 });
    }),
  );
  return out;
}
