// RIB micro-benchmark: memory per route and time per route through Adj-RIB-In → Loc-RIB
// (decision process included, import policy none; the sending peers negotiated no family
// outbound, so no Adj-RIB-Out queue is filled), and UPDATE packing out of an Adj-RIB-Out.
//
//   node --expose-gc --import tsx bench/rib.ts            (all scenarios)
//   node --expose-gc --import tsx bench/rib.ts 1x1000000  (one: peers x prefixes)
//
// The reference is BIRD on this machine (issue 7): ~18 MB for ~100k prefixes x 3 paths,
// i.e. ~60 octets per route. The in-run reference for time is a naive RIB (one Map of
// prefix text → route object per peer, attributes copied per route), built the same way.
import type { UpdateMessage } from '../bgp/codec/index.js';
import { Rib } from '../bgp/rib/index.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error('run with node --expose-gc');
  process.exit(1);
}

function heap(): number {
  for (let i = 0; i < 3; i++) gc!();
  // Typed arrays (the RIB's prefix index and journal) live outside the V8 heap: counted too.
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

function prefixOf(i: number): string {
  // /24s from 1.0.0.0 upward, then /32s: unique, realistic lengths.
  return `${(i >>> 16) & 255 || 1}.${(i >>> 8) & 255}.${i & 255}.0/24`;
}

/** The UPDATEs peer p sends: `per` prefixes per message, a few distinct attribute sets per peer. */
function* updates(p: number, count: number, per = 500): Generator<UpdateMessage> {
  for (let start = 0; start < count; start += per) {
    const nlri = [];
    for (let i = start; i < Math.min(count, start + per); i++) nlri.push({ prefix: prefixOf(i + 65536) });
    const variant = (start / per) % 4;
    yield {
      type: 'update',
      withdrawn: [],
      nlri,
      attributes: {
        origin: 'igp',
        asPath: [{ type: 'sequence', asns: [65001 + p, 3356, 1299 + variant] }],
        nextHop: `192.0.2.${p + 1}`,
        med: variant,
        communities: [65001 * 65536 + variant],
      },
    };
  }
}

interface Result {
  name: string;
  routes: number;
  bytesPerRoute: number;
  nsPerRoute: number;
}

function runRib(peers: number, prefixes: number): Result {
  const before = heap();
  const rib = new Rib({ localAs: 65000, routerId: '10.0.0.1', collectChanges: true });
  const ps = Array.from({ length: peers }, (_, p) =>
    rib.addPeer({ address: `192.0.2.${p + 1}`, asn: 65001 + p, routerId: `1.1.1.${p + 1}`, families: [] }),
  );
  let ns = 0n;
  for (let p = 0; p < peers; p++) {
    for (const u of updates(p, prefixes)) {
      const t0 = process.hrtime.bigint();
      rib.update(ps[p], u);
      ns += process.hrtime.bigint() - t0;
    }
  }
  const after = heap();
  const routes = peers * prefixes;
  if (rib.stats().prefixes['ipv4-unicast'] !== prefixes) throw new Error('lost prefixes');
  const r = { name: `rib ${peers} x ${prefixes}`, routes, bytesPerRoute: (after - before) / routes, nsPerRoute: Number(ns) / routes };
  (globalThis as { keep?: unknown }).keep = rib;
  (globalThis as { keep?: unknown }).keep = undefined;
  return r;
}

function runNaive(peers: number, prefixes: number): Result {
  const before = heap();
  const tables = Array.from({ length: peers }, () => new Map<string, object>());
  const best = new Map<string, object>();
  let ns = 0n;
  for (let p = 0; p < peers; p++) {
    for (const u of updates(p, prefixes)) {
      const t0 = process.hrtime.bigint();
      for (const n of u.nlri) {
        const route = { prefix: n.prefix, peer: p, attributes: { ...u.attributes } };
        tables[p].set(n.prefix, route);
        if (!best.has(n.prefix)) best.set(n.prefix, route);
      }
      ns += process.hrtime.bigint() - t0;
    }
  }
  const after = heap();
  const routes = peers * prefixes;
  (globalThis as { keep?: unknown }).keep = [tables, best];
  (globalThis as { keep?: unknown }).keep = undefined;
  return { name: `naive ${peers} x ${prefixes}`, routes, bytesPerRoute: (after - before) / routes, nsPerRoute: Number(ns) / routes };
}

function runPacking(prefixes: number): { name: string; messages: number; nsPerPrefix: number; octetsPerPrefix: number } {
  const rib = new Rib({ localAs: 65000, routerId: '10.0.0.1', collectChanges: false });
  const src = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1', families: [] });
  for (const u of updates(0, prefixes)) rib.update(src, u);
  const mon = rib.addPeer({ address: '192.0.2.200', asn: 65100, routerId: '2.2.2.2', localAddress: '192.0.2.100' });
  const out = rib.adjRibOut(mon)!;
  const t0 = process.hrtime.bigint();
  let messages = 0;
  let octets = 0;
  for (;;) {
    const batch = out.pull(256 * 1024);
    if (batch.length === 0) break;
    messages += batch.length;
    for (const b of batch) octets += b.length;
  }
  const ns = Number(process.hrtime.bigint() - t0);
  return {
    name: `pack ${prefixes} to one eBGP peer (4096-octet messages)`,
    messages,
    nsPerPrefix: ns / prefixes,
    octetsPerPrefix: octets / prefixes,
  };
}

const BIRD_BYTES_PER_ROUTE = (18 * 1024 * 1024) / 300_000;
const scenarios: Array<[number, number]> = process.argv[2]
  ? [process.argv[2].split('x').map(Number) as [number, number]]
  : [
      [1, 1_000_000],
      [10, 100_000],
      [3, 100_000],
    ];

console.log(`node ${process.version}, ${new Date().toISOString()}`);
console.log(`reference: BIRD ~${BIRD_BYTES_PER_ROUTE.toFixed(0)} octets/route (18 MB for 100k x 3 paths, this machine)`);
for (const [peers, prefixes] of scenarios) {
  const naive = runNaive(peers, prefixes);
  const r = runRib(peers, prefixes);
  console.log(
    `${r.name.padEnd(20)} ${r.bytesPerRoute.toFixed(0).padStart(5)} octets/route (${(r.bytesPerRoute / BIRD_BYTES_PER_ROUTE).toFixed(2)}x BIRD, ` +
      `${(r.bytesPerRoute / naive.bytesPerRoute).toFixed(2)}x naive)  ${r.nsPerRoute.toFixed(0).padStart(5)} ns/route ` +
      `(${(r.nsPerRoute / naive.nsPerRoute).toFixed(2)}x naive's ${naive.nsPerRoute.toFixed(0)} ns, which runs no decision process)  ` +
      `heap ${((r.bytesPerRoute * r.routes) / 1048576).toFixed(1)} MB`,
  );
}
const pk = runPacking(process.argv[2] ? 100_000 : 1_000_000);
console.log(
  `${pk.name}: ${pk.messages} messages, ${pk.nsPerPrefix.toFixed(0)} ns/prefix, ${pk.octetsPerPrefix.toFixed(2)} octets/prefix on the wire`,
);
