// Codec throughput over real traffic, against bgpdump (C, libbgpdump) on the same file in
// the same run. `node --import tsx bench/codec.ts [passes]`
//
//   decode   decodeMessage over every message of the dump, already in memory
//   encode   encodeMessage of every decoded message (byte-for-byte layouts included)
//   job      the whole dump to text: MRT records → decoded → one JSON line per message,
//            the same work bgpdump -m does (records → one text line per prefix)
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { decodeMessage, encodeMessage, readMrt, type BgpMessage, type CodecOptions } from '../index.js';

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

function best(fn: () => void): number {
  let min = Infinity;
  for (let i = 0; i < passes; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    min = Math.min(min, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return min;
}

let prefixes = 0;
for (const m of messages) prefixes += prefixesOf(decodeMessage(m.bytes, m.options));

// Decoded messages are not kept while decoding is timed: a speaker drops each one once the
// RIB has it, and a large live heap would make every garbage collection mark it again.
const decodeS = best(() => {
  for (const m of messages) decodeMessage(m.bytes, m.options);
});
let decoded: BgpMessage[] = messages.map((m) => decodeMessage(m.bytes, m.options));
const encodeS = best(() => {
  for (let i = 0; i < decoded.length; i++) encodeMessage(decoded[i], messages[i].options);
});
decoded = [];
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
console.log(`codec over ${messages.length} messages, ${prefixes} prefixes (best of ${passes}, node ${process.version})`);
console.log(`  decode  ${decodeS.toFixed(3)} s  ${fmt(messages.length / decodeS)} msg/s  ${fmt(prefixes / decodeS)} prefixes/s`);
console.log(`  encode  ${encodeS.toFixed(3)} s  ${fmt(messages.length / encodeS)} msg/s  ${fmt(prefixes / encodeS)} prefixes/s`);
console.log(`  job     ${jobS.toFixed(3)} s  MRT → JSON text, ${fmt(prefixes / jobS)} prefixes/s`);
console.log(
  `bgpdump ${bgpdumpVersion}: ${bgpdumpS.toFixed(3)} s for the same file (-m, ${bgpdumpLines} lines), ${fmt(prefixes / bgpdumpS)} prefixes/s`,
);
console.log(
  `ratio: decode is ${(bgpdumpS / decodeS).toFixed(1)}x bgpdump's whole run; the text job is ${(bgpdumpS / jobS).toFixed(2)}x bgpdump`,
);
