// The `podroute` command line: one subcommand per job.
import { packageVersion } from '../cni/version.js';
import { ROOT, runCli } from './commands.js';

const usage = `usage: podroute <command> [arguments]   (podroute -h, --help | -v, --version)

commands:
  demo [--nodes N] [--once]  a whole cluster in this process, no root: mesh, reflector, top-of-rack, live view
  mrt <file>                 print the BGP messages of an MRT dump (gzip or plain) as JSON lines
  bgpd --config <file>       run a BGP speaker daemon (status, routes, rib, neighbor: ask a running one)
  reflector --config <file>  run a route reflector daemon (status, routes: ask a running one)
  apply|create -f <file>     write resources (YAML, as calicoctl) to the datastore
  get <kind> [name]          read resources; delete <kind> <name> removes one
  ipam show [--show-blocks]  IP pools and blocks in use
  node run [--config file]   run the node agent (flags: podroute node run --help)
  node status                BGP peers of the running agent, as calicoctl node status
  bgp summary|routes         the agent's sessions, learned routes and programmed routes
  policy explain <ns>/<pod>  what may reach a pod and what it may reach (verdict, counters: podroute policy --help)
  lab up|down|status|exec <file.clab.yml>, lab pod add <node> <name>   containerlab labs in network namespaces
  completion bash|zsh        a shell completion script: source <(podroute completion bash)

"podroute <command> --help" shows a command's subcommands and every flag.
`;

const [command, ...args] = process.argv.slice(2);

// A reader that closes the pipe early (| head) is not an error.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

async function run(): Promise<number> {
  switch (command) {
    case undefined:
    case 'help':
    case '-h':
    case '--help':
      process.stdout.write(usage);
      return 0;
    case '-v':
    case '--version':
      process.stdout.write(`podroute ${packageVersion()}\n`);
      return 0;
  }
  if (!ROOT.subcommands?.some((c) => c.name === command)) {
    process.stderr.write(`podroute: unknown command "${command}"\n\n${usage}`);
    return 2;
  }
  // Every command's flags, help and completion come from the one tree in commands.ts.
  return runCli([command, ...args]);
}

run().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`podroute: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  },
);
