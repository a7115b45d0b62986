// The `podroute` command line: every command is in the tree of commands.ts.
import { runCli } from './commands.js';

// A reader that closes the pipe early (| head) is not an error.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

runCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`podroute: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  },
);
