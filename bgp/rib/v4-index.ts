// IPv4 prefix key → number, by open addressing in typed arrays. A V4Key (address * 64 +
// length) past 32.0.0.0 is no Smi, so a Map keyed by it boxes each key; split by length into
// Maps keyed by the address as an int32 it did not box, but each lookup in a Map of a million
// entries still cost ~400 ns in cache misses, and the Maps' backing stores were a million
// entries for the GC to walk. Here a lookup is a multiply and, mostly, one probe, and the
// arrays hold no pointers at all: 8 octets a slot, at most half of them in use.
import type { V4Key } from './prefix.js';

const EMPTY = -1;

export class V4Index {
  /** Per slot: the address, as an int32. */
  private addrs: Int32Array;
  /** Per slot: number * 64 + prefix length; EMPTY for a free slot. */
  private values: Int32Array;
  private shift: number;
  private count = 0;

  constructor(bits = 10) {
    this.addrs = new Int32Array(1 << bits);
    this.values = new Int32Array(1 << bits).fill(EMPTY);
    this.shift = 32 - bits;
  }

  get size(): number {
    return this.count;
  }

  get(key: V4Key): number | undefined {
    const len = key % 64;
    const a = ((key - len) / 64) | 0;
    const values = this.values;
    const mask = values.length - 1;
    for (let i = this.home(a, len); ; i = (i + 1) & mask) {
      const v = values[i];
      if (v === EMPTY) return undefined;
      if ((v & 63) === len && this.addrs[i] === a) return v >> 6;
    }
  }

  /** Numbers up to 2^25 - 1. */
  set(key: V4Key, n: number): void {
    if (n >= 1 << 25) throw new RangeError(`IPv4 prefix number ${n}: the index holds up to 33,554,431`);
    if (2 * (this.count + 1) > this.values.length) this.grow();
    const len = key % 64;
    const a = ((key - len) / 64) | 0;
    this.put(a, len, n * 64 + len);
  }

  delete(key: V4Key): void {
    const len = key % 64;
    const a = ((key - len) / 64) | 0;
    const addrs = this.addrs;
    const values = this.values;
    const mask = values.length - 1;
    let i = this.home(a, len);
    for (; ; i = (i + 1) & mask) {
      const v = values[i];
      if (v === EMPTY) return;
      if ((v & 63) === len && addrs[i] === a) break;
    }
    this.count--;
    // Backward shift: pull later entries of the run into the gap when the gap lies between
    // their home and where they are, so a lookup never meets a gap before its key.
    for (let j = (i + 1) & mask; values[j] !== EMPTY; j = (j + 1) & mask) {
      const h = this.home(addrs[j], values[j] & 63);
      if (((j - h) & mask) >= ((j - i) & mask)) {
        addrs[i] = addrs[j];
        values[i] = values[j];
        i = j;
      }
    }
    values[i] = EMPTY;
  }

  private put(a: number, len: number, value: number): void {
    const addrs = this.addrs;
    const values = this.values;
    const mask = values.length - 1;
    let i = this.home(a, len);
    for (; values[i] !== EMPTY; i = (i + 1) & mask) {
      if ((values[i] & 63) === len && addrs[i] === a) {
        values[i] = value;
        return;
      }
    }
    addrs[i] = a;
    values[i] = value;
    this.count++;
  }

  /** Fibonacci hashing of the address, the length mixed in: the top bits of the product. */
  private home(a: number, len: number): number {
    return Math.imul(a ^ Math.imul(len, 0x27d4eb2d), 0x9e3779b1) >>> this.shift;
  }

  private grow(): void {
    const addrs = this.addrs;
    const values = this.values;
    const bits = 32 - this.shift + 1;
    this.addrs = new Int32Array(1 << bits);
    this.values = new Int32Array(1 << bits).fill(EMPTY);
    this.shift = 32 - bits;
    this.count = 0;
    for (let i = 0; i < values.length; i++) if (values[i] !== EMPTY) this.put(addrs[i], values[i] & 63, values[i]);
  }
}
