// The `podroute` command line: one subcommand per job.
import { DATASTORE_COMMANDS, runDatastoreCommand } from './datastore.js';
import { bgpdCommand, reflectorCommand } from './bgpd.js';
import { mrtCommand } from './mrt.js';
import { runPolicyCommand } from './policy.js';
import { bgpCommand, nodeCommand } from './node.js';
import { labCommand } from '../lab/cli.js';
import { packageVersion } from '../cni/version.js';

const usage = `usage: podroute <command> [arguments]   (podroute -h, --help | -v, --version)

commands:
  mrt <file>                 print the BGP messages of an MRT dump (gzip or plain) as JSON lines
  bgpd --config <file>       run a BGP speaker daemon (status, routes: ask a running one)
  reflector --config <file>  run a route reflector daemon (status, routes: ask a running one)
  apply|create -f <file>     write resources (YAML, as calicoctl) to the datastore
  get <kind> [name]          read resources; delete <kind> <name> removes one
  ipam show [--show-blocks]  IP pools and blocks in use
  node run [--config file]   run the node agent (flags: podroute node run --help)
  node status                BGP peers of the running agent, as calicoctl node status
  bgp summary|routes         the agent's sessions, learned routes and programmed routes
  policy explain <ns>/<pod>  what may reach a pod and what it may reach (verdict, counters: podroute policy --help)
  lab up|down|status|exec <file.clab.yml>, lab pod add <node> <name>   containerlab labs in network namespaces
`;

const [command, ...args] = process.argv.slice(2);

// A reader that closes the pipe early (| head) is not an error.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

async function run(): Promise<number> {
  if (command !== undefined && (DATASTORE_COMMANDS as readonly string[]).includes(command)) {
    return runDatastoreCommand([command, ...args], { stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) });
  }
  switch (command) {
    case 'mrt':
      return mrtCommand(args);
    case 'bgpd':
      return bgpdCommand(args);
    case 'node':
      return nodeCommand(args);
    case 'bgp':
      return bgpCommand(args);
    case 'reflector':
      return reflectorCommand(args);
    case 'lab':
      return labCommand(args);
    case 'policy':
      return runPolicyCommand(args, { stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) });
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
    default:
      process.stderr.write(`podroute: unknown command "${command}"\n\n${usage}`);
      return 2;
  }
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
