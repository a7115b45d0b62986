// Every `podroute` command, its subcommands and flags: the one tree that help, flag checking
// and shell completion are read from (args.ts). Each area declares its own commands next to
// the code that runs them; this puts them together under `podroute`.
import { packageVersion } from '../cni/version.js';
import { completionScript, dispatch, helpText, UsageError, type CommandSpec, type Io } from './args.js';
import { daemonSpec } from './bgpd.js';
import { datastoreCommands } from './datastore.js';
import { DEMO_COMMAND } from './demo.js';
import { LAB_COMMAND } from './lab.js';
import { mrtCommand } from './mrt.js';
import { bgpCommand, nodeCommand } from './node.js';
import { policyCommand } from './policy.js';
import { flowsCommand } from './flows.js';

const io: Io = { stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) };

const [apply, create, get, del, ipam] = datastoreCommands(io);

export const ROOT: CommandSpec = {
  name: 'podroute',
  summary: 'A BGP speaker and a Calico-like container network. Every command takes -h, --help.',
  options: { version: { type: 'boolean', short: 'v', help: 'print the version' } },
  run(p, out) {
    out.stdout(p.values.version ? `podroute ${packageVersion()}\n` : helpText(ROOT, ['podroute']));
    return 0;
  },
  subcommands: [
    DEMO_COMMAND,
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
        const [file] = p.positionals;
        if (!file) throw new UsageError('mrt: <file> is required');
        if (p.values.large && !p.values.bgpdump) throw new UsageError('mrt: -l goes with -m');
        return mrtCommand(file, { bgpdump: p.values.bgpdump === true, large: p.values.large === true });
      },
    },
    daemonSpec('bgpd'),
    daemonSpec('reflector'),
    apply!,
    create!,
    get!,
    del!,
    ipam!,
    nodeCommand(io),
    bgpCommand(io),
    policyCommand(io),
    flowsCommand(io),
    LAB_COMMAND,
    {
      name: 'completion',
      summary: 'a shell completion script: source <(podroute completion bash)',
      args: '<bash|zsh>',
      maxPositionals: 1,
      run: (p, out) => {
        const shell = p.positionals[0];
        if (shell !== 'bash' && shell !== 'zsh') throw new UsageError(`completion: ${JSON.stringify(shell ?? '')} must be bash or zsh`);
        out.stdout(completionScript(ROOT, shell));
        return 0;
      },
    },
  ],
};

/** Runs `podroute ...argv`; returns the exit code. */
export function runCli(argv: readonly string[]): Promise<number> {
  // `podroute help` is `podroute --help`, as many tools take it.
  return dispatch(ROOT, argv.length === 1 && argv[0] === 'help' ? ['--help'] : argv, io);
}
