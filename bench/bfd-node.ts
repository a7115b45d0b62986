// The podroute side of bench/bfd.ts: one BFD endpoint in its own process, as `podroute bgpd`
// runs it (its sessions on a thread of their own; BFD_THREAD=main runs them on the main
// event loop instead): COUNT sessions with one remote ADDRESS, each from its own local address of a range
// starting at FIRST (one remote cannot tell sessions from one address apart, FRR's bfdd
// neither). Prints how many are Up and how many went down, once a second, for the bench.
//   node --import tsx bench/bfd-node.ts ADDRESS FIRST COUNT INTERVAL_MS MULTIPLIER
import { createBfdEndpoint } from '../bgp/bfd/index.js';

const [remote, first, countText, intervalText, multText] = process.argv.slice(2);
if (!remote || !first || !countText) {
  console.error('usage: bfd-node.ts ADDRESS FIRST COUNT [INTERVAL_MS] [MULTIPLIER]');
  process.exit(2);
}
const count = Number(countText);
const interval = Number(intervalText ?? 300);
const multiplier = Number(multText ?? 3);
const base = first
  .split('.')
  .map(Number)
  .reduce((n, o) => n * 256 + o, 0);
const bfd = createBfdEndpoint({ thread: process.env.BFD_THREAD === 'main' ? 'main' : 'worker' });
bfd.on('error', (e) => process.stdout.write(`error ${e.message}\n`));
let downs = 0;
const why = new Map<number, number>();
bfd.on('state', (_s, to, from, diag) => {
  if (from !== 'Up' || to === 'Up') return;
  downs++;
  why.set(diag, (why.get(diag) ?? 0) + 1);
});
const sessions = Array.from({ length: count }, (_, i) => {
  const n = base + i;
  const localAddress = [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  return bfd.add({ peer: remote, localAddress, minTxInterval: interval, minRxInterval: interval, multiplier });
});
setInterval(() => {
  const up = sessions.filter((s) => s.isUp).length;
  const diags = [...why].map(([d, n]) => `diag${d}=${n}`).join(',');
  process.stdout.write(`up ${up} downs ${downs} ${diags}\n`);
}, 1000);
process.on('SIGTERM', () => {
  void bfd.close().then(() => process.exit(0));
});
