// Dense numbers for a family's prefixes, shared by its Loc-RIB table, change journal and
// Adj-RIB-Outs: the table keeps a prefix's paths at its number, the journal's entries are
// numbers, and each Adj-RIB-Out records what it sent as one entry per number (the id of the
// exported attribute set: 16 bits, 32 once its group has more than 65,535 sets) instead of a
// Map entry per prefix, which at 1,400 reflector clients × 5,600 prefixes was most of the
// reflector's memory. A number lives while the table, the journal or a peer holds it, so a
// change looks its prefix up once, and no peer looks it up at all.
import type { PrefixKey, V4Key, V6Key } from './prefix.js';
import { V4Index } from './v4-index.js';
import { V6Index } from './v6-index.js';

/** PrefixKey → number. */
class KeyIndex {
  private readonly v4 = new V4Index();
  private readonly v6 = new V6Index();

  get(key: PrefixKey): number | undefined {
    return typeof key === 'string' ? this.v6.get(key as V6Key) : this.v4.get(key as V4Key);
  }

  set(key: PrefixKey, n: number): void {
    if (typeof key === 'string') this.v6.set(key as V6Key, n);
    else this.v4.set(key as V4Key, n);
  }

  delete(key: PrefixKey): void {
    if (typeof key === 'string') this.v6.delete(key as V6Key);
    else this.v4.delete(key as V4Key);
  }
}

export class PrefixSlots {
  private readonly index = new KeyIndex();
  /** Prefix of each number. */
  readonly keys: PrefixKey[] = [];
  private holders = new Int32Array(1024);
  private readonly free: number[] = [];
  // The last key looked up and its number (-1: none). A change looks its prefix up in the
  // table, then sets it, then journals it: one lookup does for the three.
  private lastKey: PrefixKey = -1;
  private lastN = -1;

  /** Highest number in use + 1: how far a per-peer array may need to reach. */
  get capacity(): number {
    return this.keys.length;
  }

  get(key: PrefixKey): number | undefined {
    if (key !== this.lastKey) {
      this.lastKey = key;
      this.lastN = this.index.get(key) ?? -1;
    }
    return this.lastN < 0 ? undefined : this.lastN;
  }

  /** The prefix's number, one more holder. */
  acquire(key: PrefixKey): number {
    const n = this.get(key);
    return n === undefined ? this.add(key) : this.hold(n);
  }

  /** One more holder of a number in use. */
  hold(n: number): number {
    this.holders[n]++;
    return n;
  }

  /** One holder fewer; the number is free once none is left. */
  release(n: number): void {
    if (--this.holders[n] === 0) {
      const key = this.keys[n];
      this.index.delete(key);
      if (key === this.lastKey) this.lastN = -1;
      this.free.push(n);
    }
  }

  /** A new number, with one holder, for a prefix get() found none for. */
  add(key: PrefixKey): number {
    let n = this.free.pop();
    if (n === undefined) {
      n = this.keys.length;
      this.keys.push(key);
      if (n >= this.holders.length) {
        const h = new Int32Array(this.holders.length * 2);
        h.set(this.holders);
        this.holders = h;
      }
    } else this.keys[n] = key;
    this.index.set(key, n);
    this.lastKey = key;
    this.lastN = n;
    this.holders[n] = 1;
    return n;
  }
}
