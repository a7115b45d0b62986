// Loaded into `podroute bgpd` with --import when the runner is given --alloc-profile: samples
// every allocation from start to exit, the objects the GC has already collected included (what
// `--heap-prof` leaves out, and what the young generation's collections cost), and writes a
// .heapprofile that Chrome DevTools opens (Memory → Load).
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.PODROUTE_ALLOC_PROFILE_DIR ?? '.';
const session = new Session();
session.connect();
session.post('HeapProfiler.enable');
session.post('HeapProfiler.startSampling', {
  samplingInterval: 8192,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});
process.on('exit', () => {
  // The in-thread session answers synchronously, which is what an exit handler needs.
  session.post('HeapProfiler.stopSampling', (error, result) => {
    if (!error) writeFileSync(join(dir, `bgpd-${process.pid}.heapprofile`), JSON.stringify(result.profile));
  });
});
