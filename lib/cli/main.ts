// The `podroute` command line: one subcommand per job.
import { mrtCommand } from './mrt.js';

const usage = `usage: podroute <command> [arguments]

commands:
  mrt <file>    print the BGP messages of an MRT dump (gzip or plain) as JSON lines
`;

const [command, ...args] = process.argv.slice(2);

// A reader that closes the pipe early (| head) is not an error.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

function run(): number {
  switch (command) {
    case 'mrt':
      return mrtCommand(args);
    case undefined:
    case 'help':
    case '--help':
      process.stdout.write(usage);
      return 0;
    default:
      process.stderr.write(`podroute: unknown command "${command}"\n\n${usage}`);
      return 2;
  }
}

try {
  process.exitCode = run();
} catch (e) {
  process.stderr.write(`podroute: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
}
