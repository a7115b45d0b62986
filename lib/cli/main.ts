// The `podroute` command line: one subcommand per job.
const [command] = process.argv.slice(2);

switch (command) {
  default:
    process.stderr.write('usage: podroute <command> ...\n');
    process.exitCode = command === undefined || command === 'help' ? 0 : 2;
}
