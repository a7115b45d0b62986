// What `podroute lab ...` does, one function a command, given the values lib/cli/lab.ts read
// from the command line: containerlab topologies brought up with network namespaces.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { findPod, namespaceApply, parseLabelChanges, parseLabels, parsePortList, podAdd, podDel, podLabel, podRef } from './pods.js';
import { birdSocket } from './bird.js';
import { containerExecArgv } from './containers.js';
import { labDown, labEnv, labRuntime, labUp, nsName } from './runner.js';
import { listLabs, readState, stateRoot, type LabState } from './state.js';
import { formatLabEnv } from './env.js';
import { formatLabStatus, labStatus } from './status.js';
import { loadTopology } from './topology.js';

/** A lab named by its topology file or its name. */
function labName(arg: string | undefined): string {
  if (!arg) throw new Error('which lab? give its topology file or its name');
  return existsSync(arg) && /\.ya?ml$/.test(arg) ? loadTopology(arg).name : arg;
}

function mustState(root: string, name: string): LabState {
  const s = readState(root, name);
  if (!s) throw new Error(`lab ${name} is not up (no state under ${root}); podroute lab up <file.clab.yml>`);
  return s;
}

function onlyLab(root: string, explicit: string | undefined): LabState {
  if (explicit) return mustState(root, labName(explicit));
  const labs = listLabs(root);
  if (labs.length !== 1)
    throw new Error(labs.length === 0 ? 'no lab is up' : `several labs are up (${labs.join(', ')}): say which with --lab`);
  return mustState(root, labs[0]!);
}

/** Where every command finds the labs' state: --state-dir, else PODROUTE_LAB_STATE_DIR, else the default. */
export interface LabWhere {
  stateDir?: string;
}

const out = (s: string) => process.stdout.write(s);

/** `lab up`: builds the lab, or repairs it when it is up already. */
export async function labUpCommand(
  file: string,
  o: LabWhere & { prefix?: string; datastore?: 'redis' | 'etcd'; runtime?: 'netns' | 'docker'; dockerHost?: string },
): Promise<number> {
  if (o.dockerHost !== undefined && o.runtime !== 'docker') throw new Error('--docker-host: only with --runtime docker');
  const topo = loadTopology(file);
  const t0 = Date.now();
  const state = await labUp(topo, {
    stateRoot: stateRoot(o.stateDir),
    prefix: o.prefix,
    datastore: o.datastore,
    runtime: o.runtime,
    dockerHost: o.dockerHost,
    log: (l) => out(`  ${l}\n`),
  });
  const took = ((Date.now() - t0) / 1000).toFixed(1);
  out(
    state.runtime === 'docker'
      ? `lab ${state.name} is up (${took} s): ${state.containers?.length ?? 0} containers, ${state.bridges?.length ?? 0} host bridges on ${state.dockerHost}; state in ${state.dir}\n`
      : `lab ${state.name} is up (${took} s): ${state.namespaces.length} namespaces, ${state.processes.length} processes; state in ${state.dir}\n`,
  );
  return 0;
}

/** `lab down`: stops what up started and deletes what it made. */
export async function labDownCommand(lab: string, o: LabWhere): Promise<number> {
  const name = labName(lab);
  const r = await labDown(name, { stateRoot: stateRoot(o.stateDir) });
  out(
    !r
      ? `lab ${name} is not up\n`
      : r.containers !== undefined
        ? `lab ${name} is down: ${r.containers} containers removed, ${r.links ?? 0} host links and bridges deleted, ${r.namespaces} pod namespaces deleted\n`
        : `lab ${name} is down: ${r.processes} processes stopped, ${r.namespaces} namespaces deleted\n`,
  );
  return 0;
}

/** `lab status`: nodes, processes and sessions, as a table or JSON. */
export async function labStatusCommand(lab: string, o: LabWhere & { json?: boolean }): Promise<number> {
  const s = await labStatus(mustState(stateRoot(o.stateDir), labName(lab)));
  out(o.json ? JSON.stringify(s, null, 2) + '\n' : formatLabStatus(s));
  return 0;
}

/** `lab exec`: a command inside a node (its namespace or container) or a pod; its exit code. */
export async function labExecCommand(lab: string, target: string, command: readonly string[], o: LabWhere): Promise<number> {
  const state = mustState(stateRoot(o.stateDir), labName(lab));
  if (command.length === 0) throw new Error('lab exec: which command? podroute lab exec <lab> <node|pod> <command...>');
  const pod = findPod(state, target);
  const ns = pod ? pod.namespace : state.namespaces.some((n) => n.node === target) ? nsName(state, target) : undefined;
  if (!ns) throw new Error(`${target} is neither a node nor a pod of lab ${state.name}`);
  const node = pod ? undefined : target;
  if (node && labRuntime(state) === 'docker') {
    const argv = containerExecArgv(state, node, [...command], process.stdin.isTTY === true);
    return new Promise<number>((resolve) => {
      const child = spawn(argv[0]!, argv.slice(1), { stdio: 'inherit' });
      child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
      child.on('error', () => resolve(127));
    });
  }
  const env = labEnv(state, undefined);
  if (node && state.processes.some((p) => p.node === node && p.what === 'agent')) env.PODROUTE_CONTROL = `${state.dir}/${node}.sock`;
  if (state.processes.some((p) => p.node === node && p.what === 'bgpd')) env.VTYSH_PAGER = 'cat';
  // vtysh inside an FRR node, birdc inside a BIRD node: point it at that node's instance.
  const runs = (what: string) => node !== undefined && state.processes.some((p) => p.node === node && p.what === what);
  const cmd =
    command[0] === 'vtysh' && runs('bgpd')
      ? ['vtysh', '--vty_socket', `${state.dir}/${node}/frr`, ...command.slice(1)]
      : command[0] === 'birdc' && runs('bird')
        ? ['birdc', '-s', birdSocket(state, node!), ...command.slice(1)]
        : command;
  return new Promise<number>((resolve) => {
    const child = spawn('ip', ['netns', 'exec', ns, ...cmd], { stdio: 'inherit', env });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
    child.on('error', () => resolve(127));
  });
}

/** Which lab a pod or namespace command acts on: --lab, or the only one up. */
export interface LabPick extends LabWhere {
  lab?: string;
}

/** `lab pod add`: a pod on a node, through the CNI plugin. */
export async function labPodAddCommand(
  node: string,
  name: string,
  o: LabPick & { namespace?: string; labels?: string; ports?: string },
): Promise<number> {
  const state = onlyLab(stateRoot(o.stateDir), o.lab);
  const pod = await podAdd(state, node, name, {
    namespace: o.namespace,
    labels: o.labels === undefined ? undefined : parseLabels(o.labels),
    ports: o.ports === undefined ? undefined : parsePortList(o.ports),
  });
  out(`pod ${podRef(pod)} on ${pod.node}: ${[pod.ip, pod.ip6].filter(Boolean).join(', ')} (network namespace ${pod.namespace})\n`);
  return 0;
}

/** `lab pod del`: CNI DEL and the pod's namespace deleted. */
export async function labPodDelCommand(pod: string, o: LabPick & { namespace?: string }): Promise<number> {
  await podDel(onlyLab(stateRoot(o.stateDir), o.lab), pod, o.namespace);
  out(`pod ${pod} deleted\n`);
  return 0;
}

/** `lab pod label`: k=v sets, k- removes; the pod's WorkloadEndpoint is rewritten. */
export async function labPodLabelCommand(pod: string, changes: string, o: LabPick & { namespace?: string }): Promise<number> {
  const now = await podLabel(onlyLab(stateRoot(o.stateDir), o.lab), pod, parseLabelChanges(changes), o.namespace);
  out(`pod ${pod} labels: ${formatLabels(now)}\n`);
  return 0;
}

/** `lab namespace`: the Namespace with exactly these labels. */
export async function labNamespaceCommand(name: string, o: LabPick & { labels?: string }): Promise<number> {
  const now = await namespaceApply(onlyLab(stateRoot(o.stateDir), o.lab), name, o.labels === undefined ? {} : parseLabels(o.labels));
  out(`namespace ${name} labels: ${formatLabels(now)}\n`);
  return 0;
}

/** `lab env`: the exports that point podroute on this host at the lab's datastore (eval them). */
export function labEnvCommand(o: LabPick): number {
  out(formatLabEnv(onlyLab(stateRoot(o.stateDir), o.lab)));
  return 0;
}

/** `lab list`: the labs that are up, one a line. */
export function labListCommand(o: LabWhere): number {
  for (const n of listLabs(stateRoot(o.stateDir))) out(`${n}\n`);
  return 0;
}

const formatLabels = (labels: Readonly<Record<string, string>>): string =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',') || '(none)';
