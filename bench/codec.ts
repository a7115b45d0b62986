// Codec throughput over real traffic, against bgpdump (C, libbgpdump) on the same file in
// the same run. `node --import tsx bench/codec.ts [passes]`
//
//   decode   decodeMessage over every message of the dump, already in memory, prefix lists read
//   decode-unread  the same, the IPv4 prefix lists left unread (made on demand)
//   decode-received  decodeReceivedMessage: checked, no message object made unless asked for,
//            the speaker's case (its RIB reads the octets)
//   encode   encodeMessage of every decoded message (byte-for-byte layouts included)
//   packed   encodeMessage of the dump's IPv4 prefixes packed 780 to an UPDATE under one
//            attribute set: the codec API's cost per prefix, not per message (the speaker
//            itself writes tables from the RIB's numeric keys, not through encodeMessage)
//   job      the whole dump to text: MRT records → decoded → one JSON line per message,
//            the same work bgpdump -m does (records → one text line per prefix)
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import {
  type BgpMessage,
  type CodecOptions,
  decodeMessage,
  decodeReceivedMessage,
  encodeMessage,
  type Nlri,
  readMrt,
  type UpdateMessage,
} from '../index.js';

const passes = Number(process.argv[2] ?? 20);
const file = new URL('../test/data/updates.20190101.0000.gz', import.meta.url).pathname;
const raw = gunzipSync(readFileSync(file));

const messages: { bytes: Buffer; options: CodecOptions }[] = [];
for (const r of readMrt(raw)) if (r.kind === 'message') messages.push({ bytes: r.message, options: { fourOctetAs: r.fourOctetAs } });

function prefixesOf(m: BgpMessage): number {
  if (m.type !== 'update') return 0;
  const a = m.attributes;
  return m.nlri.length + m.withdrawn.length + (a.mpReach?.nlri?.length ?? 0) + (a.mpUnreach?.withdrawn?.length ?? 0);
}

/**
 * Seconds per pass, the best of `passes`. Each pass's process CPU time is kept too: on a
 * shared machine the median CPU time moves less with other work than any wall time.
 */
const runs: Record<string, number[]> = {};
const cpuRuns: Record<string, number[]> = {};
function best(fn: () => void, name = ''): number {
  const times: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < passes; i++) {
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1e6);
  }
  times.sort((x, y) => x - y);
  cpu.sort((x, y) => x - y);
  if (name) {
    runs[name] = times;
    cpuRuns[name] = cpu;
  }
  return times[0];
}
const medianCpu = (name: string) => cpuRuns[name][cpuRuns[name].length >> 1];

let prefixes = 0;
for (const m of messages) prefixes += prefixesOf(decodeMessage(m.bytes, m.options));

// Decoded messages are not kept while decoding is timed: a speaker drops each one once the
// RIB has it, and a large live heap would make every garbage collection mark it again. The
// prefix lists are read (they are made on first read): every prefix is decoded, as a user of
// the codec reads them; `decode-unread` leaves them unmade, and `decode-received` is the
// speaker's case: its table reads the octets, and no message object is made at all.
const decodeS = best(() => {
  for (const m of messages) prefixesOf(decodeMessage(m.bytes, m.options));
}, 'decode');
best(() => {
  for (const m of messages) decodeMessage(m.bytes, m.options);
}, 'decode-unread');
best(() => {
  for (const m of messages) decodeReceivedMessage(m.bytes, m.options);
}, 'decode-received');
let decoded: BgpMessage[] = messages.map((m) => decodeMessage(m.bytes, m.options));
best(() => {
  for (let i = 0; i < decoded.length; i++) encodeMessage(decoded[i], messages[i].options);
}, 'encode');
const ipv4: Nlri[] = [];
for (const m of decoded) if (m.type === 'update') for (const n of m.nlri) ipv4.push({ prefix: n.prefix });
decoded = [];
const PER_UPDATE = 780; // 780 five-octet /32s and the attributes stay under 4096 octets
const packed: UpdateMessage[] = [];
for (let i = 0; i < ipv4.length; i += PER_UPDATE) {
  packed.push({
    type: 'update',
    withdrawn: [],
    attributes: {
      origin: 'igp',
      asPath: [{ type: 'sequence', asns: [64512, 65001] }],
      nextHop: '192.0.2.1',
      communities: [(65001 << 16) | 1],
    },
    nlri: ipv4.slice(i, i + PER_UPDATE),
  });
}
const packedS = best(() => {
  for (const m of packed) encodeMessage(m);
}, 'packed');
const jobS = best(() => {
  let out = 0;
  for (const r of readMrt(raw)) {
    if (r.kind !== 'message') continue;
    out += JSON.stringify({
      time: r.timestamp,
      peer: r.peerIp,
      peerAs: r.peerAs,
      message: decodeMessage(r.message, { fourOctetAs: r.fourOctetAs }),
    }).length;
  }
  if (out === 0) throw new Error('nothing written');
});

// bgpdump reads the uncompressed dump, so neither side pays for gunzip.
const dir = mkdtempSync(join(tmpdir(), 'podroute-bench-'));
const plain = join(dir, 'updates.mrt');
writeFileSync(plain, raw);
let bgpdumpS = NaN;
let bgpdumpLines = 0;
let bgpdumpVersion = 'not installed';
try {
  bgpdumpVersion = spawnSync('bgpdump', ['-h'], { encoding: 'utf8' }).stderr.match(/bgpdump version ([\d.]+)/)?.[1] ?? 'unknown';
  bgpdumpLines =
    execFileSync('bgpdump', ['-m', '-q', plain], { maxBuffer: 1 << 28 })
      .toString()
      .split('\n').length - 1;
  bgpdumpS = best(() => {
    const r = spawnSync('sh', ['-c', `bgpdump -m -q ${plain} > /dev/null`]);
    if (r.status !== 0) throw new Error(`bgpdump failed: ${r.stderr}`);
  });
} catch (e) {
  process.stderr.write(`bgpdump reference unavailable: ${(e as Error).message}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
console.log(
  `codec over ${messages.length} messages, ${prefixes} prefixes (best wall time and median CPU time of ${passes} passes, node ${process.version})`,
);
for (const [name, count] of [
  ['decode', messages.length],
  ['decode-unread', messages.length],
  ['decode-received', messages.length],
  ['encode', messages.length],
] as const) {
  const b = runs[name][0];
  const m = medianCpu(name);
  console.log(
    `  ${name}  ${b.toFixed(3)} s  ${fmt(count / b)} msg/s  ${fmt(prefixes / b)} prefixes/s  (median CPU ${m.toFixed(3)} s, ${fmt(prefixes / m)} prefixes/s)`,
  );
}
console.log(
  `  packed  ${packedS.toFixed(3)} s  ${fmt(packed.length / packedS)} msg/s  ${fmt(ipv4.length / packedS)} prefixes/s  (median CPU ${medianCpu('packed').toFixed(3)} s, ${fmt(ipv4.length / medianCpu('packed'))} prefixes/s; ${ipv4.length} IPv4 prefixes in ${packed.length} UPDATEs)`,
);
console.log(`  job     ${jobS.toFixed(3)} s  MRT → JSON text, ${fmt(prefixes / jobS)} prefixes/s`);
console.log(
  `bgpdump ${bgpdumpVersion}: ${bgpdumpS.toFixed(3)} s for the same file (-m, ${bgpdumpLines} lines), ${fmt(prefixes / bgpdumpS)} prefixes/s`,
);
console.log(
  `ratio: decode is ${(bgpdumpS / decodeS).toFixed(1)}x bgpdump's whole run; the text job is ${(bgpdumpS / jobS).toFixed(2)}x bgpdump`,
);
