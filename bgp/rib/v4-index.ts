// IPv4 prefix key → number, by open addressing in a typed array. A V4Key (address * 64 +
// length) past 32.0.0.0 is no Smi, so a Map keyed by it boxes each key; split by length into
// Maps keyed by the address as an int32 it did not box, but each lookup in a Map of a million
// entries still cost ~400 ns in cache misses, and the Maps' backing stores were a million
// entries for the GC to walk. Here a lookup is a multiply and, mostly, one probe, and the
// array holds no pointers at all: 8 octets a slot, at most half of them in use. A slot's two
// words sit side by side, so that a probe of a table far larger than the caches costs one
// miss, not one per word.
import { v4KeyAddress, v4KeyLength, type V4Key } from './prefix.js';

const EMPTY = -1;

export class V4Index {
  /** Per slot, two int32s: the address, then number * 64 + prefix length (EMPTY for a free slot). */
  private slots: Int32Array;
  private shift: number;
  private count = 0;

  constructor(bits = 10) {
    this.slots = emptySlots(bits);
    this.shift = 32 - bits;
  }

  get size(): number {
    return this.count;
  }

  get(key: V4Key): number | undefined {
    const len = v4KeyLength(key);
    const a = v4KeyAddress(key) | 0;
    const slots = this.slots;
    const mask = slots.length - 2;
    for (let i = this.home(a, len); ; i = (i + 2) & mask) {
      const v = slots[i + 1];
      if (v === EMPTY) return undefined;
      if ((v & 63) === len && slots[i] === a) return v >> 6;
    }
  }

  /** Numbers up to 2^25 - 1. */
  set(key: V4Key, n: number): void {
    if (n >= 1 << 25) throw new RangeError(`IPv4 prefix number ${n}: the index holds up to 33,554,431`);
    if (4 * (this.count + 1) > this.slots.length) this.grow();
    const len = v4KeyLength(key);
    const a = v4KeyAddress(key) | 0;
    this.put(a, len, n * 64 + len);
  }

  delete(key: V4Key): void {
    const len = v4KeyLength(key);
    const a = v4KeyAddress(key) | 0;
    const slots = this.slots;
    const mask = slots.length - 2;
    let i = this.home(a, len);
    for (; ; i = (i + 2) & mask) {
      const v = slots[i + 1];
      if (v === EMPTY) return;
      if ((v & 63) === len && slots[i] === a) break;
    }
    this.count--;
    // Backward shift: pull later entries of the run into the gap when the gap lies between
    // their home and where they are, so a lookup never meets a gap before its key.
    for (let j = (i + 2) & mask; slots[j + 1] !== EMPTY; j = (j + 2) & mask) {
      const h = this.home(slots[j], slots[j + 1] & 63);
      if (((j - h) & mask) >= ((j - i) & mask)) {
        slots[i] = slots[j];
        slots[i + 1] = slots[j + 1];
        i = j;
      }
    }
    slots[i + 1] = EMPTY;
  }

  private put(a: number, len: number, value: number): void {
    const slots = this.slots;
    const mask = slots.length - 2;
    let i = this.home(a, len);
    for (; slots[i + 1] !== EMPTY; i = (i + 2) & mask) {
      if ((slots[i + 1] & 63) === len && slots[i] === a) {
        slots[i + 1] = value;
        return;
      }
    }
    slots[i] = a;
    slots[i + 1] = value;
    this.count++;
  }

  private home(a: number, len: number): number {
    return homeSlot(a, len, this.shift);
  }

  private grow(): void {
    const old = this.slots;
    const bits = 32 - this.shift + 1;
    const slots = emptySlots(bits);
    const shift = 32 - bits;
    const mask = slots.length - 2;
    // Every key is distinct: each goes to the first free slot from its home, with no compare.
    for (let j = 0; j < old.length; j += 2) {
      const v = old[j + 1];
      if (v === EMPTY) continue;
      const a = old[j];
      let i = homeSlot(a, v & 63, shift);
      while (slots[i + 1] !== EMPTY) i = (i + 2) & mask;
      slots[i] = a;
      slots[i + 1] = v;
    }
    this.slots = slots;
    this.shift = shift;
  }
}

/** Fibonacci hashing of the address, the length mixed in: the top bits of the product, as an even index. */
function homeSlot(a: number, len: number, shift: number): number {
  return (Math.imul(a ^ Math.imul(len, 0x27d4eb2d), 0x9e3779b1) >>> shift) << 1;
}

function emptySlots(bits: number): Int32Array {
  // Every word EMPTY, the address words too: fill is one pass in native code.
  return new Int32Array(2 << bits).fill(EMPTY);
}
