// A BFD endpoint in a process of its own whose main thread the test can stall: SIGUSR1 keeps
// the main thread in a busy loop for STALL_MS, as a long compile or GC would. Prints one line
// per event: `ready`, `stall-begin`, `stall-end`, `state FROM TO DIAG UPCOUNT`.
//   node --import tsx test/support/bfd-stall-node.ts worker|main PEER LOCAL STALL_MS
import { createBfdEndpoint } from '../../bgp/bfd/index.js';

const [thread, peer, localAddress, stallText] = process.argv.slice(2);
if ((thread !== 'worker' && thread !== 'main') || !peer || !localAddress) {
  console.error('usage: bfd-stall-node.ts worker|main PEER LOCAL STALL_MS');
  process.exit(2);
}
const stallMs = Number(stallText ?? 1500);
const bfd = createBfdEndpoint({ thread });
const s = bfd.add({ peer, localAddress, minTxInterval: 100, minRxInterval: 100, multiplier: 3 });
s.on('state', (to, from, diag) => process.stdout.write(`state ${from} ${to} ${diag} ${s.upCount}\n`));
bfd.on('error', (e) => process.stdout.write(`error ${e.message}\n`));
await bfd.ready();
process.stdout.write('ready\n');
process.on('SIGUSR1', () => {
  process.stdout.write('stall-begin\n');
  const end = performance.now() + stallMs;
  while (performance.now() < end);
  process.stdout.write('stall-end\n');
});
process.on('SIGTERM', () => {
  void bfd.close().then(() => process.exit(0));
});
