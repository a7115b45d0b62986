// `podroute lab`: its commands and flags. What each does is in lib/lab/cli.ts; this reads the
// command line for it.
import {
  labDownCommand,
  labEnvCommand,
  labExecCommand,
  labListCommand,
  labNamespaceCommand,
  labPodAddCommand,
  labPodDelCommand,
  labPodLabelCommand,
  labStatusCommand,
  labUpCommand,
} from '../lab/index.js';
import { UsageError, type CommandSpec, type OptionSpec, type Parsed } from './args.js';

const STATE_DIR: OptionSpec = {
  type: 'string',
  value: '<dir>',
  help: "where the labs' state is kept (default /var/run/podroute/lab, or PODROUTE_LAB_STATE_DIR)",
};
const LAB: OptionSpec = { type: 'string', value: '<lab>', help: 'which lab (default: the only one up)' };
const NAMESPACE: OptionSpec = { type: 'string', short: 'n', value: '<namespace>', help: 'the pod\'s namespace (default "default")' };
const LABELS: OptionSpec = { type: 'string', value: '<k=v,...>', help: 'labels, comma separated' };

const text = (p: Parsed, name: string): string | undefined => (typeof p.values[name] === 'string' ? (p.values[name] as string) : undefined);
const where = (p: Parsed) => ({ stateDir: text(p, 'state-dir') });
const pick = (p: Parsed) => ({ ...where(p), lab: text(p, 'lab'), namespace: text(p, 'namespace') });

/** The positionals a command needs, or a UsageError saying which is missing. */
function needs(p: Parsed, command: string, names: readonly string[]): string[] {
  const missing = names.slice(p.positionals.length);
  if (missing.length) throw new UsageError(`lab ${command}: ${missing.join(' ')} ${missing.length === 1 ? 'is' : 'are'} required`);
  return p.positionals;
}

export const LAB_COMMAND: CommandSpec = {
  name: 'lab',
  summary: 'containerlab labs in network namespaces (or Docker containers)',
  subcommands: [
    {
      name: 'up',
      summary: 'build the lab (namespaces, links, FRR, the datastore, agents); again: repair it',
      args: '<file.clab.yml>',
      maxPositionals: 1,
      options: {
        prefix: { type: 'string', value: '<prefix>', help: 'prefix of the network namespaces it makes (default: from the lab name)' },
        datastore: {
          type: 'string',
          choices: ['redis', 'etcd'],
          help: 'the datastore node runs Redis (default) or a three-member etcd cluster',
        },
        runtime: {
          type: 'string',
          choices: ['netns', 'docker'],
          help: 'netns: network namespaces (default); docker: a container a node (clab-<lab>-<node>), wired as containerlab does',
        },
        'docker-host': { type: 'string', value: '<unix://...>', help: 'the Docker daemon, with --runtime docker' },
        'state-dir': STATE_DIR,
      },
      run: (p) => {
        const [file] = needs(p, 'up', ['<file.clab.yml>']);
        return labUpCommand(file!, {
          ...where(p),
          prefix: text(p, 'prefix'),
          datastore: text(p, 'datastore') as 'redis' | 'etcd' | undefined,
          runtime: text(p, 'runtime') as 'netns' | 'docker' | undefined,
          dockerHost: text(p, 'docker-host'),
        });
      },
    },
    {
      name: 'down',
      summary: 'stop what up started and delete its namespaces, links, bridges (or containers)',
      args: '<file.clab.yml|lab>',
      maxPositionals: 1,
      options: { 'state-dir': STATE_DIR },
      run: (p) => labDownCommand(needs(p, 'down', ['<file.clab.yml|lab>'])[0]!, where(p)),
    },
    {
      name: 'status',
      summary: 'nodes, processes and BGP sessions',
      args: '<file.clab.yml|lab>',
      maxPositionals: 1,
      options: {
        output: { type: 'string', short: 'o', choices: ['json', 'table'], help: 'json (for scripts) or a table (default)' },
        'state-dir': STATE_DIR,
      },
      run: (p) => labStatusCommand(needs(p, 'status', ['<file.clab.yml|lab>'])[0]!, { ...where(p), json: p.values.output === 'json' }),
    },
    {
      name: 'exec',
      summary: 'run a command inside a node or a pod',
      description: 'Flags go before the lab: everything after <node|pod> is the command, flags included.',
      args: '<file.clab.yml|lab> <node|pod> <command...>',
      commandAfter: 2,
      options: { 'state-dir': STATE_DIR },
      run: (p) => {
        const [lab, target, ...command] = needs(p, 'exec', ['<file.clab.yml|lab>', '<node|pod>', '<command...>']);
        return labExecCommand(lab!, target!, command, where(p));
      },
    },
    {
      name: 'pod',
      summary: "pods on the lab's nodes, through the podroute-cni plugin",
      subcommands: [
        {
          name: 'add',
          summary: 'a pod on a node',
          args: '<node> <name>',
          maxPositionals: 2,
          options: {
            namespace: NAMESPACE,
            labels: LABELS,
            ports: { type: 'string', value: '<name=80/TCP,...>', help: "the pod's named ports (for policies that name them)" },
            lab: LAB,
            'state-dir': STATE_DIR,
          },
          run: (p) => {
            const [node, name] = needs(p, 'pod add', ['<node>', '<name>']);
            return labPodAddCommand(node!, name!, { ...pick(p), labels: text(p, 'labels'), ports: text(p, 'ports') });
          },
        },
        {
          name: 'del',
          summary: "CNI DEL, then the pod's network namespace deleted",
          args: '<[namespace/]name>',
          maxPositionals: 1,
          options: { namespace: NAMESPACE, lab: LAB, 'state-dir': STATE_DIR },
          run: (p) => labPodDelCommand(needs(p, 'pod del', ['<[namespace/]name>'])[0]!, pick(p)),
        },
        {
          name: 'label',
          summary: 'relabel a pod (k=v sets, k- removes): rewrites its WorkloadEndpoint',
          args: '<[namespace/]name> <k=v,k2-,...>',
          maxPositionals: 2,
          options: { namespace: NAMESPACE, lab: LAB, 'state-dir': STATE_DIR },
          run: (p) => {
            const [pod, changes] = needs(p, 'pod label', ['<[namespace/]name>', '<k=v,k2-,...>']);
            return labPodLabelCommand(pod!, changes!, pick(p));
          },
        },
      ],
    },
    {
      name: 'namespace',
      summary: 'write the Namespace with exactly these labels',
      args: '<name>',
      maxPositionals: 1,
      options: { labels: LABELS, lab: LAB, 'state-dir': STATE_DIR },
      run: (p) =>
        labNamespaceCommand(needs(p, 'namespace', ['<name>'])[0]!, { ...where(p), lab: text(p, 'lab'), labels: text(p, 'labels') }),
    },
    {
      name: 'env',
      summary: 'the exports that point podroute on this host at the lab\'s datastore: eval "$(podroute lab env <lab>)"',
      description:
        'Without them, podroute apply, get, delete, ipam and policy use the local file datastore, which the lab never reads.\n' +
        'For one command, --lab <lab> does the same.',
      args: '[<file.clab.yml|lab>]',
      maxPositionals: 1,
      options: { 'state-dir': STATE_DIR },
      run: (p) => labEnvCommand({ ...where(p), lab: p.positionals[0] }),
    },
    {
      name: 'list',
      summary: 'the labs that are up',
      options: { 'state-dir': STATE_DIR },
      run: (p) => labListCommand(where(p)),
    },
  ],
};
