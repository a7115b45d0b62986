// The long fuzz run: `node --import tsx bench/fuzz-codec.ts [runs] [seed]`.
import { fuzzCodec, sampleMessages } from '../test/support/codec-fuzz.js';

const runs = Number(process.argv[2] ?? 1_000_000);
const seed = Number(process.argv[3] ?? Date.now() % 1_000_000);
const messages = sampleMessages(new URL('../test/data/updates.20190101.0000.gz', import.meta.url).pathname, 5);
const t0 = performance.now();
const r = fuzzCodec(messages, runs, seed);
console.log(
  `${r.runs} runs (seed ${seed}) in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${r.decoded} decoded, ${r.rejected} rejected with BgpError, nothing else escaped`,
);
