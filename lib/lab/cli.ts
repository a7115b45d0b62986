// `podroute lab ...`: containerlab topologies brought up with network namespaces.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { findPod, namespaceApply, parseLabelChanges, parseLabels, parsePortList, podAdd, podDel, podLabel, podRef } from './pods.js';
import { containerExecArgv } from './containers.js';
import { labDown, labEnv, labRuntime, labUp, nsName } from './runner.js';
import { listLabs, readState, stateRoot, type LabState } from './state.js';
import { formatLabStatus, labStatus } from './status.js';
import { loadTopology } from './topology.js';

export const LAB_USAGE = `usage: podroute lab <command> [--state-dir dir]

  up <file.clab.yml> [--prefix p] [--datastore redis|etcd] [--runtime netns|docker] [--docker-host unix://...]
                                    build the lab (namespaces, links, FRR, the datastore, agents); again = repair;
                                    etcd: a three-member etcd cluster on the datastore node instead of Redis;
                                    docker: one container per node (clab-<lab>-<node>), links as containerlab wires them
  down <file.clab.yml|lab>          stop what up started (by PID or container) and delete its namespaces, links, bridges
  status <file.clab.yml|lab> [-o json]   nodes, processes and BGP sessions
  exec <file.clab.yml|lab> <node|pod> <command...>   run a command inside a node or pod
  pod add <node> <name> [--namespace ns] [--labels k=v,...] [--ports name=80/TCP,...] [--lab l]
                                    a pod on a node, through the podroute-cni plugin
  pod del <[ns/]name> [--lab l]     CNI DEL and delete the pod's network namespace
  pod label <[ns/]name> k=v,k2-,... [--lab l]   relabel (k- removes k): rewrites its WorkloadEndpoint
  namespace <name> [--labels k=v,...] [--lab l]   write the Namespace with exactly these labels
  list                              labs that are up
`;

function takeFlag(args: string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  if (i < 0) return undefined;
  const v = args[i + 1];
  if (v === undefined) throw new Error(`${flag}: needs a value`);
  args.splice(i, 2);
  return v;
}

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

export async function labCommand(argv: string[]): Promise<number> {
  const args = [...argv];
  const root = stateRoot(takeFlag(args, '--state-dir'));
  const out = (s: string) => process.stdout.write(s);
  const [sub, ...rest] = args;
  switch (sub) {
    case 'up': {
      const prefix = takeFlag(rest, '--prefix');
      const datastore = takeFlag(rest, '--datastore');
      if (datastore !== undefined && datastore !== 'redis' && datastore !== 'etcd')
        throw new Error(`--datastore: must be redis or etcd, not ${JSON.stringify(datastore)}`);
      const runtime = takeFlag(rest, '--runtime');
      if (runtime !== undefined && runtime !== 'netns' && runtime !== 'docker')
        throw new Error(`--runtime: must be netns or docker, not ${JSON.stringify(runtime)}`);
      const dockerHost = takeFlag(rest, '--docker-host');
      if (dockerHost !== undefined && runtime !== 'docker') throw new Error('--docker-host: only with --runtime docker');
      const topo = loadTopology(rest[0] ?? '');
      const t0 = Date.now();
      const state = await labUp(topo, { stateRoot: root, prefix, datastore, runtime, dockerHost, log: (l) => out(`  ${l}\n`) });
      const took = ((Date.now() - t0) / 1000).toFixed(1);
      out(
        state.runtime === 'docker'
          ? `lab ${state.name} is up (${took} s): ${state.containers?.length ?? 0} containers, ${state.bridges?.length ?? 0} host bridges on ${state.dockerHost}; state in ${state.dir}\n`
          : `lab ${state.name} is up (${took} s): ${state.namespaces.length} namespaces, ${state.processes.length} processes; state in ${state.dir}\n`,
      );
      return 0;
    }
    case 'down': {
      const name = labName(rest[0]);
      const r = await labDown(name, { stateRoot: root });
      out(
        !r
          ? `lab ${name} is not up\n`
          : r.containers !== undefined
            ? `lab ${name} is down: ${r.containers} containers removed, ${r.links ?? 0} host links and bridges deleted, ${r.namespaces} pod namespaces deleted\n`
            : `lab ${name} is down: ${r.processes} processes stopped, ${r.namespaces} namespaces deleted\n`,
      );
      return 0;
    }
    case 'status': {
      const json = rest.includes('-o') && rest[rest.indexOf('-o') + 1] === 'json';
      const s = await labStatus(mustState(root, labName(rest[0])));
      out(json ? JSON.stringify(s, null, 2) + '\n' : formatLabStatus(s));
      return 0;
    }
    case 'exec': {
      const state = mustState(root, labName(rest[0]));
      const [target, ...command] = rest.slice(1);
      if (!target || command.length === 0) throw new Error('usage: podroute lab exec <lab> <node|pod> <command...>');
      const pod = findPod(state, target);
      const ns = pod ? pod.namespace : state.namespaces.some((n) => n.node === target) ? nsName(state, target) : undefined;
      if (!ns) throw new Error(`${target} is neither a node nor a pod of lab ${state.name}`);
      const node = pod ? undefined : target;
      if (node && labRuntime(state) === 'docker') {
        const argv = containerExecArgv(state, node, command, process.stdin.isTTY === true);
        return new Promise<number>((resolve) => {
          const child = spawn(argv[0]!, argv.slice(1), { stdio: 'inherit' });
          child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
          child.on('error', () => resolve(127));
        });
      }
      const env = labEnv(state, undefined);
      if (node && state.processes.some((p) => p.node === node && p.what === 'agent')) env.PODROUTE_CONTROL = `${state.dir}/${node}.sock`;
      if (state.processes.some((p) => p.node === node && p.what === 'bgpd')) env.VTYSH_PAGER = 'cat';
      // vtysh inside an FRR node: point it at that node's instance.
      const cmd =
        node && command[0] === 'vtysh' && state.processes.some((p) => p.node === node && p.what === 'bgpd')
          ? ['vtysh', '--vty_socket', `${state.dir}/${node}/frr`, ...command.slice(1)]
          : command;
      return new Promise<number>((resolve) => {
        const child = spawn('ip', ['netns', 'exec', ns, ...cmd], { stdio: 'inherit', env });
        child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
        child.on('error', () => resolve(127));
      });
    }
    case 'pod': {
      const [op, ...p] = rest;
      const lab = takeFlag(p, '--lab');
      const namespace = takeFlag(p, '--namespace') ?? takeFlag(p, '-n');
      const labels = takeFlag(p, '--labels');
      const ports = takeFlag(p, '--ports');
      const state = onlyLab(root, lab);
      if (op === 'add' && p.length === 2) {
        const pod = await podAdd(state, p[0]!, p[1]!, {
          namespace,
          labels: labels === undefined ? undefined : parseLabels(labels),
          ports: ports === undefined ? undefined : parsePortList(ports),
        });
        out(`pod ${podRef(pod)} on ${pod.node}: ${[pod.ip, pod.ip6].filter(Boolean).join(', ')} (network namespace ${pod.namespace})\n`);
        return 0;
      }
      if (op === 'del' && p.length === 1) {
        await podDel(state, p[0]!, namespace);
        out(`pod ${p[0]} deleted\n`);
        return 0;
      }
      if (op === 'label' && p.length === 2) {
        const now = await podLabel(state, p[0]!, parseLabelChanges(p[1]!), namespace);
        out(`pod ${p[0]} labels: ${formatLabels(now)}\n`);
        return 0;
      }
      throw new Error(
        'usage: podroute lab pod add <node> <name> [--namespace ns] [--labels k=v,...] [--ports name=80/TCP,...] | pod del <[ns/]name> | pod label <[ns/]name> k=v,k2-,... [--lab <lab>]',
      );
    }
    case 'namespace': {
      const p = [...rest];
      const lab = takeFlag(p, '--lab');
      const labels = takeFlag(p, '--labels');
      if (p.length !== 1) throw new Error('usage: podroute lab namespace <name> [--labels k=v,...] [--lab <lab>]');
      const now = await namespaceApply(onlyLab(root, lab), p[0]!, labels === undefined ? {} : parseLabels(labels));
      out(`namespace ${p[0]} labels: ${formatLabels(now)}\n`);
      return 0;
    }
    case 'list':
      for (const n of listLabs(root)) out(`${n}\n`);
      return 0;
    default:
      process.stderr.write(LAB_USAGE);
      return sub === undefined || sub === 'help' || sub === '--help' ? 0 : 2;
  }
}

const formatLabels = (labels: Readonly<Record<string, string>>): string =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',') || '(none)';
