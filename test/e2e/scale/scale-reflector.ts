// The reflector of the scale test, run in a worker thread: its own V8 isolate, so the heap
// figures it reports are the reflector's alone, not the 200 clients' in the main thread.
import { runInNewContext } from 'node:vm';
import v8 from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import { RouteReflector } from '../../../reflector/index.js';

v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const { asn, range, holdTime } = workerData as { asn: number; range: string; holdTime: number };
const rr = new RouteReflector({
  asn,
  routerId: '127.0.0.1',
  clusterId: '127.0.0.1',
  listen: { host: '127.0.0.1', port: 0 },
  rib: { collectChanges: false },
});
rr.addClientRange({ range, asn, holdTime, families: ['ipv4-unicast'] });

function heap(): number {
  gc();
  return v8.getHeapStatistics().used_heap_size;
}

const port = await rr.start();
const baseline = heap();
parentPort!.postMessage({ kind: 'started', port, baseline });
parentPort!.on('message', (m: { kind: string }) => {
  if (m.kind === 'status') {
    const s = rr.status();
    parentPort!.postMessage({
      kind: 'status',
      heap: heap(),
      external: process.memoryUsage().external,
      established: s.peers.filter((p) => p.state === 'Established').length,
      prefixes: s.rib.prefixes['ipv4-unicast'],
      updateGroups: s.updateGroups,
      attributeSets: s.rib.attributeSets,
      sent: s.peers.reduce((n, p) => n + p.prefixesSent, 0),
    });
  } else if (m.kind === 'stop') {
    void rr.stop('scale test over').then(() => parentPort!.postMessage({ kind: 'stopped' }));
  }
});
