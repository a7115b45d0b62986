// IPv4 prefix key → number, by open addressing in typed arrays. A V4Key (address * 64 +
// length) past 32.0.0.0 is no Smi, so a Map keyed by it boxes each key; split by length into
// Maps keyed by the address as an int32 it did not box, but each lookup in a Map of a million
// entries still cost ~400 ns in cache misses, and the Maps' backing stores were a million
// entries for the GC to walk. Here a lookup is a multiply and, mostly, one probe, and the
// arrays hold no pointers at all.
import type { V4Key } from './prefix.js';

const EMPTY = -1;

export class V4Index {
  private keys: Float64Array;
  private values: Int32Array;
  private shift: number;
  private count = 0;

  constructor(bits = 10) {
    this.keys = new Float64Array(1 << bits).fill(EMPTY);
    this.values = new Int32Array(1 << bits);
    this.shift = 32 - bits;
  }

  get size(): number {
    return this.count;
  }

  get(key: V4Key): number | undefined {
    const keys = this.keys;
    const mask = keys.length - 1;
    for (let i = this.home(key); ; i = (i + 1) & mask) {
      const k = keys[i];
      if (k === key) return this.values[i];
      if (k === EMPTY) return undefined;
    }
  }

  set(key: V4Key, value: number): void {
    if (2 * (this.count + 1) > this.keys.length) this.grow();
    const keys = this.keys;
    const mask = keys.length - 1;
    let i = this.home(key);
    for (; keys[i] !== EMPTY; i = (i + 1) & mask) {
      if (keys[i] === key) {
        this.values[i] = value;
        return;
      }
    }
    keys[i] = key;
    this.values[i] = value;
    this.count++;
  }

  delete(key: V4Key): void {
    const keys = this.keys;
    const values = this.values;
    const mask = keys.length - 1;
    let i = this.home(key);
    for (; keys[i] !== key; i = (i + 1) & mask) if (keys[i] === EMPTY) return;
    this.count--;
    // Backward shift: pull later entries of the run into the gap when the gap lies between
    // their home and where they are, so a lookup never meets a gap before its key.
    for (let j = (i + 1) & mask; keys[j] !== EMPTY; j = (j + 1) & mask) {
      const h = this.home(keys[j]);
      if (((j - h) & mask) >= ((j - i) & mask)) {
        keys[i] = keys[j];
        values[i] = values[j];
        i = j;
      }
    }
    keys[i] = EMPTY;
  }

  /** Fibonacci hashing of the address, the length mixed in: the top bits of the product. */
  private home(key: V4Key): number {
    const len = key % 64;
    const a = ((key - len) / 64) | 0;
    return Math.imul(a ^ Math.imul(len, 0x27d4eb2d), 0x9e3779b1) >>> this.shift;
  }

  private grow(): void {
    const keys = this.keys;
    const values = this.values;
    const bits = 32 - this.shift + 1;
    this.keys = new Float64Array(1 << bits).fill(EMPTY);
    this.values = new Int32Array(1 << bits);
    this.shift = 32 - bits;
    this.count = 0;
    for (let i = 0; i < keys.length; i++) if (keys[i] !== EMPTY) this.set(keys[i], values[i]);
  }
}
