// Preloaded into each agent of bench/soak.ts (`node --import`): writes the process's memory as
// Node sees it (V8 heap used and total, external, array buffers, RSS) to the file named by
// PODROUTE_SOAK_HEAP, every PODROUTE_SOAK_HEAP_MS (default 2000), so the benchmark reads the
// heap beside /proc's VmRSS without the agent exporting it. Plain JavaScript: it loads as it is
// whether the agent runs the sources through tsx or the built dist/.
import { renameSync, writeFileSync } from 'node:fs';

const file = process.env.PODROUTE_SOAK_HEAP;
const every = Number(process.env.PODROUTE_SOAK_HEAP_MS ?? 2000);
if (file) {
  const write = () => {
    const m = process.memoryUsage();
    // Written aside then renamed, so the reader never sees half a line.
    writeFileSync(
      `${file}.tmp`,
      JSON.stringify({
        at: Date.now(),
        rss: m.rss,
        heapUsed: m.heapUsed,
        heapTotal: m.heapTotal,
        external: m.external,
        arrayBuffers: m.arrayBuffers,
      }),
    );
    renameSync(`${file}.tmp`, file);
  };
  write();
  setInterval(write, every).unref();
}
