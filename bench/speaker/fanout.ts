// The 10×100k scenario's hot path without sockets or processes, for profiling the RIB under
// many peers: 10 eBGP sources announce 100,000 /32s each (NO_EXPORT, as the injector sends
// them) in 800-prefix UPDATEs, 64 KB worth at a time, and after each batch every
// Adj-RIB-Out is pulled dry, as bgpd's sessions do. An iBGP monitor receives everything.
//
//   node --import tsx [--cpu-prof] bench/speaker/fanout.ts [sources] [prefixes] [updates between pulls]
import type { UpdateMessage } from '../../bgp/codec/index.js';
import { Rib } from '../../bgp/rib/index.js';
import { formatIpv4Number } from '../../ip/index.js';
import { NO_EXPORT } from './wire.js';

const sources = Number(process.argv[2] ?? 10);
const prefixes = Number(process.argv[3] ?? 100_000);
/** UPDATEs between pulls: 16 per 64 KB socket read, times the sockets read in one event-loop turn. */
const cadence = Number(process.argv[4] ?? 16 * sources);
const rib = new Rib({ localAs: 65000, routerId: '10.90.0.1', collectChanges: false });
const peers = Array.from({ length: sources }, (_, i) =>
  rib.addPeer({ address: `10.90.0.${11 + i}`, asn: 65001 + i, routerId: `10.90.0.${11 + i}`, localAddress: '10.90.0.1' }),
);
const monitor = rib.addPeer({ address: '10.90.0.100', asn: 65000, routerId: '10.90.0.100', localAddress: '10.90.0.1' });
const outs = [...peers, monitor].map((p) => rib.adjRibOut(p)!);

function message(source: number, from: number, count: number): UpdateMessage {
  const nlri = [];
  for (let i = from; i < from + count; i++) {
    const a = 0x0b000000 + source * 0x100000 + i;
    nlri.push({ prefix: `${formatIpv4Number(a)}/32` });
  }
  return {
    type: 'update',
    withdrawn: [],
    nlri,
    attributes: {
      origin: 'igp',
      asPath: [{ type: 'sequence', asns: [65001 + source] }],
      nextHop: `10.90.0.${11 + source}`,
      communities: [NO_EXPORT],
    },
  };
}

const PER_MESSAGE = 800;
const messages: [number, UpdateMessage][] = [];
// Interleaved, as ten sockets deliver them.
for (let i = 0; i < prefixes; i += PER_MESSAGE)
  for (let s = 0; s < sources; s++) messages.push([s, message(s, i, Math.min(PER_MESSAGE, prefixes - i))]);

const t0 = performance.now();
let sent = 0;
for (let m = 0; m < messages.length; m++) {
  const [s, u] = messages[m]!;
  rib.update(peers[s]!, u);
  if (m % cadence === cadence - 1 || m === messages.length - 1) {
    for (const out of outs) for (let b = out.pull(); b.length > 0; b = out.pull()) sent += b.length;
  }
}
const ms = performance.now() - t0;
// With --expose-gc: the live heap (what the routes really hold, not garbage waiting for a GC).
const gc = (globalThis as { gc?: () => void }).gc;
messages.length = 0;
gc?.();
console.log(
  `${sources} × ${prefixes} through ${outs.length} Adj-RIB-Outs: ${ms.toFixed(0)} ms, ${((ms * 1e6) / (sources * prefixes)).toFixed(0)} ns/prefix, ${sent} messages to the monitor, heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MB${gc ? ' live' : ''}, rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MB`,
);
