// IPv6 prefix key → number, by open addressing in a typed array, as V4Index does for IPv4. A
// Map keyed by the key strings cost 200–700 ns a lookup at 100,000 prefixes: the hash of a
// string just made from the wire, then pointers to the entry and to the key it compares.
// Here a slot holds the prefix's 128 bits and its length inline, so a lookup reads the key's
// characters (already in cache) and, mostly, one slot. Five int32s a slot, at most half of the
// slots in use.
import type { V6Key } from './prefix.js';

const EMPTY = -1;
/** Words per slot: the address's four, then number * 256 + prefix length. */
const STRIDE = 5;

export class V6Index {
  private slots: Int32Array;
  private bits: number;
  private count = 0;
  // The key being looked up, as words (set by load()).
  private a0 = 0;
  private a1 = 0;
  private a2 = 0;
  private a3 = 0;
  private len = 0;

  constructor(bits = 10) {
    this.bits = bits;
    this.slots = emptySlots(bits);
  }

  get size(): number {
    return this.count;
  }

  get(key: V6Key): number | undefined {
    this.load(key);
    const i = this.find();
    return i < 0 ? undefined : this.slots[i + 4] >> 8;
  }

  /** Numbers up to 2^23 - 1. */
  set(key: V6Key, n: number): void {
    if (n >= 1 << 23) throw new RangeError(`IPv6 prefix number ${n}: the index holds up to 8,388,607`);
    if (2 * (this.count + 1) > this.slots.length / STRIDE) this.grow();
    this.load(key);
    const value = n * 256 + this.len;
    const found = this.find();
    if (found >= 0) {
      this.slots[found + 4] = value;
      return;
    }
    const slots = this.slots;
    const end = slots.length;
    let i = this.home(this.a0, this.a1, this.a2, this.a3, this.len, this.bits);
    while (slots[i + 4] !== EMPTY) i = i + STRIDE === end ? 0 : i + STRIDE;
    slots[i] = this.a0;
    slots[i + 1] = this.a1;
    slots[i + 2] = this.a2;
    slots[i + 3] = this.a3;
    slots[i + 4] = value;
    this.count++;
  }

  delete(key: V6Key): void {
    this.load(key);
    let i = this.find();
    if (i < 0) return;
    this.count--;
    const slots = this.slots;
    const end = slots.length;
    // Backward shift, as in V4Index: a lookup never meets a gap before its key.
    for (let j = i + STRIDE === end ? 0 : i + STRIDE; slots[j + 4] !== EMPTY; j = j + STRIDE === end ? 0 : j + STRIDE) {
      const h = this.home(slots[j], slots[j + 1], slots[j + 2], slots[j + 3], slots[j + 4] & 255, this.bits);
      // How far j is from its home and from the gap, walking forward around the end.
      const fromHome = j >= h ? j - h : j - h + end;
      const fromGap = j >= i ? j - i : j - i + end;
      if (fromHome >= fromGap) {
        for (let k = 0; k < STRIDE; k++) slots[i + k] = slots[j + k];
        i = j;
      }
    }
    slots[i + 4] = EMPTY;
  }

  /** The key's length and address words, the octets past its end zero. */
  private load(key: V6Key): void {
    this.len = key.charCodeAt(0);
    const n = key.length;
    this.a0 = word(key, 1, n);
    this.a1 = n > 5 ? word(key, 5, n) : 0;
    this.a2 = n > 9 ? word(key, 9, n) : 0;
    this.a3 = n > 13 ? word(key, 13, n) : 0;
  }

  /** The slot holding the loaded key, or -1. */
  private find(): number {
    const slots = this.slots;
    const end = slots.length;
    const { a0, a1, a2, a3, len } = this;
    for (let i = this.home(a0, a1, a2, a3, len, this.bits); ; i = i + STRIDE === end ? 0 : i + STRIDE) {
      const v = slots[i + 4];
      if (v === EMPTY) return -1;
      if ((v & 255) === len && slots[i] === a0 && slots[i + 1] === a1 && slots[i + 2] === a2 && slots[i + 3] === a3) return i;
    }
  }

  private home(a0: number, a1: number, a2: number, a3: number, len: number, bits: number): number {
    let h = Math.imul(a0 ^ Math.imul(len, 0x27d4eb2d), 0x9e3779b1);
    h = Math.imul(h ^ a1 ^ (h >>> 15), 0x85ebca6b);
    h = Math.imul(h ^ a2 ^ (h >>> 13), 0xc2b2ae35);
    h = Math.imul(h ^ a3 ^ (h >>> 16), 0x9e3779b1);
    return (h >>> (32 - bits)) * STRIDE;
  }

  private grow(): void {
    const old = this.slots;
    const bits = this.bits + 1;
    const slots = emptySlots(bits);
    const end = slots.length;
    // Every key is distinct: each goes to the first free slot from its home, with no compare.
    for (let j = 0; j < old.length; j += STRIDE) {
      const v = old[j + 4];
      if (v === EMPTY) continue;
      let i = this.home(old[j], old[j + 1], old[j + 2], old[j + 3], v & 255, bits);
      while (slots[i + 4] !== EMPTY) i = i + STRIDE === end ? 0 : i + STRIDE;
      for (let k = 0; k < STRIDE; k++) slots[i + k] = old[j + k];
    }
    this.slots = slots;
    this.bits = bits;
  }
}

/** Up to four of the key's characters from `at` as one big-endian word, zero past its end. */
function word(key: string, at: number, n: number): number {
  if (at + 4 <= n)
    return (key.charCodeAt(at) << 24) | (key.charCodeAt(at + 1) << 16) | (key.charCodeAt(at + 2) << 8) | key.charCodeAt(at + 3);
  let w = 0;
  for (let k = 0; k < 4; k++) w = (w << 8) | (at + k < n ? key.charCodeAt(at + k) : 0);
  return w;
}

function emptySlots(bits: number): Int32Array {
  return new Int32Array(STRIDE << bits).fill(EMPTY);
}
