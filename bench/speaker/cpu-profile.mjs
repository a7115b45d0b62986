// Loaded into `podroute bgpd` with --import when the runner is given --profile (plain JS: it loads before tsx; Node 20 refuses
// --cpu-prof in NODE_OPTIONS): samples the CPU from start to SIGHUP or exit, writes a .cpuprofile that
// Chrome DevTools or speedscope open.
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.PODROUTE_CPU_PROFILE_DIR ?? '.';
const session = new Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.start');
let part = 0;
function write() {
  // The in-thread session answers synchronously, which is what an exit handler needs.
  session.post('Profiler.stop', (error, result) => {
    if (!error) writeFileSync(join(dir, `bgpd-${process.pid}-${part++}.cpuprofile`), JSON.stringify(result.profile));
  });
}
// SIGHUP: the runner asks for the profile so far (bgpd does not use SIGHUP), then sampling goes on.
process.on('SIGHUP', () => {
  write();
  session.post('Profiler.start');
});
process.on('exit', write);
