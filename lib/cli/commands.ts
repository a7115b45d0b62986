// Every `podroute` command, its subcommands and flags: the one tree that help, flag checking
// and shell completion are read from (args.ts). Each leaf hands its arguments to the module
// that does the work.
import { labCommand } from '../lab/cli.js';
import { runDemo } from '../demo/run.js';
import { callControl } from '../bgpd/control.js';
import { dispatch, UsageError, type CommandSpec, type Io, type OptionSpec, type Parsed } from './args.js';
import { daemonSpec } from './bgpd.js';
import { runDatastoreCommand } from './datastore.js';
import { mrtCommand } from './mrt.js';
import { bgpCommand, DEFAULT_CONTROL, nodeCommand } from './node.js';
import { emit, OUTPUT, outputOf } from './output.js';
import { formatCounters, runPolicyCommand } from './policy.js';
import { completionScript } from './args.js';

const io: Io = { stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) };

const DATASTORE: OptionSpec = {
  type: 'string',
  value: 'file:PATH|redis://host:port|etcd://host:2379|memory',
  help: 'where resources live (default: a file in PODROUTE_STATE_DIR, ~/.local/state/podroute or /var/lib/podroute)',
};
const NAMESPACE: OptionSpec = {
  type: 'string',
  short: 'n',
  value: '<namespace>',
  help: 'namespace of namespaced kinds (default "default")',
};
const AGENT_CONTROL: OptionSpec = {
  type: 'string',
  value: '<socket>',
  help: `the agent's control socket (default ${DEFAULT_CONTROL}, or PODROUTE_CONTROL)`,
};
const AGENT_OUTPUT: OptionSpec = OUTPUT;

const datastore = (cmd: string) => (p: Parsed) => runDatastoreCommand([cmd, ...p.raw], io);
const write = (name: 'apply' | 'create', summary: string): CommandSpec => ({
  name,
  summary,
  options: {
    filename: { type: 'string', short: 'f', value: '<file|->', help: 'the YAML (or JSON) file, - for stdin' },
    datastore: DATASTORE,
  },
  run: datastore(name),
});

export const ROOT: CommandSpec = {
  name: 'podroute',
  summary: 'A BGP speaker and a Calico-like container network. Every command takes -h, --help.',
  options: { version: { type: 'boolean', short: 'v', help: 'print the version' } },
  subcommands: [
    {
      name: 'demo',
      summary: 'a whole cluster in this process, no root: mesh, reflector, top-of-rack, live view',
      passthrough: true,
      run: (p) => runDemo(p.raw),
    },
    {
      name: 'mrt',
      summary: 'print an MRT dump (BGP4MP messages, TABLE_DUMP_V2 RIBs; gzip or plain) as JSON lines',
      args: '<file>',
      maxPositionals: 1,
      options: {
        bgpdump: { type: 'boolean', short: 'm', help: 'one line per route as bgpdump -m prints it' },
        large: { type: 'boolean', short: 'l', help: 'with -m: the large communities field, as bgpdump -l' },
      },
      run: (p) => {
        if (!p.positionals[0]) throw new UsageError('mrt: <file> is required');
        if (p.values.large && !p.values.bgpdump) throw new UsageError('mrt: -l goes with -m');
        return mrtCommand(p.positionals, { bgpdump: p.values.bgpdump === true, large: p.values.large === true });
      },
    },
    daemonSpec('bgpd'),
    daemonSpec('reflector'),
    write('apply', 'create or replace the resources of a YAML file (as calicoctl apply)'),
    write('create', 'create the resources of a YAML file (fails if one exists)'),
    {
      name: 'get',
      summary: 'read resources of a kind, or one by name',
      args: '<kind> [name]',
      maxPositionals: 2,
      options: { namespace: NAMESPACE, output: OUTPUT, datastore: DATASTORE },
      run: datastore('get'),
    },
    {
      name: 'delete',
      summary: 'remove one resource',
      args: '<kind> <name>',
      maxPositionals: 2,
      options: { namespace: NAMESPACE, datastore: DATASTORE },
      run: datastore('delete'),
    },
    {
      name: 'ipam',
      summary: 'IP pools and blocks in use; check and repair the allocations',
      subcommands: [
        {
          name: 'show',
          summary: 'pools and their use',
          options: { 'show-blocks': { type: 'boolean', help: 'every block too' }, output: OUTPUT, datastore: DATASTORE },
          run: (p) => runDatastoreCommand(['ipam', 'show', ...p.raw], io),
        },
        {
          name: 'check',
          summary: 'allocations without an owner, owners without an allocation',
          options: { output: { ...OUTPUT, choices: ['json', 'table'] }, datastore: DATASTORE },
          run: (p) => runDatastoreCommand(['ipam', 'check', ...p.raw], io),
        },
        {
          name: 'repair',
          summary: 'release what check found leaked',
          options: { output: { ...OUTPUT, choices: ['json', 'table'] }, datastore: DATASTORE },
          run: (p) => runDatastoreCommand(['ipam', 'repair', ...p.raw], io),
        },
      ],
    },
    {
      name: 'node',
      summary: 'the node agent: run it, or ask the running one',
      subcommands: [
        {
          name: 'run',
          summary: 'run the node agent (its flags: podroute node run --help)',
          passthrough: true,
          run: (p) => nodeCommand(['run', ...p.raw]),
        },
        {
          name: 'status',
          summary: 'BGP peers of the running agent, as calicoctl node status',
          options: { control: AGENT_CONTROL, output: AGENT_OUTPUT },
          run: (p) => nodeCommand(['status', ...p.raw]),
        },
      ],
    },
    {
      name: 'bgp',
      summary: "the running agent's BGP sessions and routes",
      subcommands: [
        {
          name: 'summary',
          summary: 'sessions, as show bgp summary',
          options: { control: AGENT_CONTROL, output: AGENT_OUTPUT },
          run: (p) => bgpCommand(['summary', ...p.raw]),
        },
        {
          name: 'routes',
          summary: 'learned routes and the routes programmed in the kernel',
          options: { control: AGENT_CONTROL, output: AGENT_OUTPUT },
          run: (p) => bgpCommand(['routes', ...p.raw]),
        },
      ],
    },
    {
      name: 'policy',
      summary: 'what the network policies mean for a pod or a connection, and their counters',
      subcommands: [
        {
          name: 'explain',
          summary: 'what may reach the pod, what it may reach, and which rule decides',
          args: '<namespace>/<pod>',
          maxPositionals: 1,
          run: (p) => runPolicyCommand(['explain', ...p.raw], io),
        },
        {
          name: 'verdict',
          summary: 'one connection: allowed or not, and why',
          args: '<from> <to> <tcp|udp|sctp|icmp> [port]',
          maxPositionals: 4,
          run: (p) => runPolicyCommand(['verdict', ...p.raw], io),
        },
        {
          name: 'counters',
          summary: 'packets and bytes per policy rule on this node (the running agent)',
          options: { control: AGENT_CONTROL, output: { ...OUTPUT, choices: ['json', 'yaml', 'table'] } },
          async run(p) {
            const control = (p.values.control as string | undefined) ?? process.env.PODROUTE_CONTROL ?? DEFAULT_CONTROL;
            const r = await callControl<{ counters: Record<string, { packets: number; bytes: number }>; refused: Record<string, string> }>(
              control,
              'GET',
              '/policy/counters',
            );
            const o = outputOf(p.values.output);
            if (o === 'json' || o === 'yaml') io.stdout(emit(r, o));
            else {
              io.stdout(formatCounters(r.counters));
              for (const [resource, why] of Object.entries(r.refused)) io.stdout(`refused ${resource}: ${why}\n`);
            }
            return 0;
          },
        },
      ],
    },
    {
      name: 'lab',
      summary: 'containerlab labs in network namespaces (podroute lab --help)',
      passthrough: true,
      run: (p) => labCommand(p.raw),
    },
    {
      name: 'completion',
      summary: 'a shell completion script: source <(podroute completion bash)',
      args: '<bash|zsh>',
      maxPositionals: 1,
      run: (p) => {
        const shell = p.positionals[0];
        if (shell !== 'bash' && shell !== 'zsh') throw new UsageError(`completion: ${JSON.stringify(shell ?? '')} must be bash or zsh`);
        io.stdout(completionScript(ROOT, shell));
        return 0;
      },
    },
  ],
};

/** Runs `podroute ...argv`; the version flag is main's. */
export function runCli(argv: readonly string[]): Promise<number> {
  return dispatch(ROOT, argv, io);
}
