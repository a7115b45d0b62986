// Mutation fuzzing of the codec: real messages, corrupted at random, must either decode
// (and then re-encode to something that decodes the same) or throw BgpError. Nothing else
// may escape: no RangeError from reading past a buffer, no TypeError, no hang.
import { BgpError, decodeMessage, encodeMessage, readMrtFile, type CodecOptions } from '../../index.js';
import { prng } from './prng.js';

export function sampleMessages(path: string, every: number, extra: Buffer[] = []): Buffer[] {
  const out: Buffer[] = [...extra];
  let i = 0;
  for (const r of readMrtFile(path)) if (r.kind === 'message' && i++ % every === 0) out.push(Buffer.from(r.message));
  return out;
}

function mutate(src: Buffer, rnd: () => number): Buffer {
  const b = Buffer.from(src);
  const n = 1 + Math.floor(rnd() * 4);
  let out = b;
  for (let k = 0; k < n; k++) {
    const at = 19 + Math.floor(rnd() * Math.max(1, out.length - 19));
    switch (Math.floor(rnd() * 6)) {
      case 0: // one random octet
        if (at < out.length) out[at] = Math.floor(rnd() * 256);
        break;
      case 1: // a length-like field made small or large
        if (at + 1 < out.length) out.writeUInt16BE(rnd() < 0.5 ? Math.floor(rnd() * 8) : Math.floor(rnd() * 65536), at);
        break;
      case 2: // cut short
        out = out.subarray(0, Math.max(19, at));
        break;
      case 3: // octets inserted
        out = Buffer.concat([
          out.subarray(0, at),
          Buffer.from(Array.from({ length: 1 + Math.floor(rnd() * 8) }, () => Math.floor(rnd() * 256))),
          out.subarray(at),
        ]);
        break;
      case 4: // a flag bit flipped
        if (at < out.length) out[at] ^= 1 << Math.floor(rnd() * 8);
        break;
      default: // a single-octet length bumped by one
        if (at < out.length) out[at] = (out[at] + (rnd() < 0.5 ? 1 : 255)) & 0xff;
    }
  }
  // Keep the header consistent most of the time, so the mutation reaches the body.
  if (rnd() < 0.9 && out.length <= 65535) out.writeUInt16BE(out.length, 16);
  return out;
}

export interface FuzzResult {
  runs: number;
  decoded: number;
  rejected: number;
}

/** Runs `runs` mutations; throws (with the seed and the bytes) on anything but BgpError. */
export function fuzzCodec(messages: Buffer[], runs: number, seed: number): FuzzResult {
  const rnd = prng(seed);
  const result: FuzzResult = { runs, decoded: 0, rejected: 0 };
  for (let i = 0; i < runs; i++) {
    const input = mutate(messages[Math.floor(rnd() * messages.length)], rnd);
    const options: CodecOptions = {
      fourOctetAs: rnd() < 0.8,
      extendedMessage: rnd() < 0.2,
      addPath: rnd() < 0.1 ? { 'ipv4-unicast': true, 'ipv6-unicast': true } : undefined,
    };
    try {
      const m = decodeMessage(input, options);
      result.decoded++;
      // What decodes must encode, and read back the same.
      const again = decodeMessage(encodeMessage(m, options), options);
      if (JSON.stringify(again) !== JSON.stringify(m)) throw new Error('re-encoded message decodes differently');
    } catch (e) {
      if (e instanceof BgpError) {
        result.rejected++;
        continue;
      }
      const why = e instanceof Error ? e.stack : String(e);
      throw new Error(`fuzz run ${i} (seed ${seed}): ${why}\ninput ${input.toString('hex')}`);
    }
  }
  return result;
}
