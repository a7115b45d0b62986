// Dense numbers for the prefixes some peer was sent, shared by a family's Adj-RIB-Outs: each
// Adj-RIB-Out then records what it sent as one entry per number (the id of the exported
// attribute set: 16 bits, 32 once its group has more than 65,535 sets) instead of a Map entry per prefix, which at 1,400 reflector clients
// × 5,600 prefixes was most of the reflector's memory. A number lives while a peer holds it.
import type { PrefixKey, V4Key } from './prefix.js';

/** PrefixKey → number, IPv4 keys split by length into int32-keyed Maps as V4Table does. */
class KeyIndex {
  private readonly v4: Array<Map<number, number> | undefined> = new Array(33).fill(undefined);
  private readonly v6 = new Map<PrefixKey, number>();

  get(key: PrefixKey): number | undefined {
    if (typeof key === 'string') return this.v6.get(key);
    const len = (key as V4Key) % 64;
    return this.v4[len]?.get((((key as V4Key) - len) / 64) | 0);
  }

  set(key: PrefixKey, n: number): void {
    if (typeof key === 'string') this.v6.set(key, n);
    else {
      const len = (key as V4Key) % 64;
      (this.v4[len] ??= new Map()).set((((key as V4Key) - len) / 64) | 0, n);
    }
  }

  delete(key: PrefixKey): void {
    if (typeof key === 'string') this.v6.delete(key);
    else {
      const len = (key as V4Key) % 64;
      this.v4[len]?.delete((((key as V4Key) - len) / 64) | 0);
    }
  }
}

export class PrefixSlots {
  private readonly index = new KeyIndex();
  /** Prefix of each number. */
  readonly keys: PrefixKey[] = [];
  private holders = new Int32Array(1024);
  private readonly free: number[] = [];

  /** Highest number in use + 1: how far a per-peer array may need to reach. */
  get capacity(): number {
    return this.keys.length;
  }

  get(key: PrefixKey): number | undefined {
    return this.index.get(key);
  }

  /** The prefix's number, one more peer holding it. */
  acquire(key: PrefixKey): number {
    let n = this.index.get(key);
    if (n === undefined) {
      n = this.free.pop();
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
    }
    this.holders[n]++;
    return n;
  }

  /** One peer fewer holds the number; it is free once none does. */
  release(n: number): void {
    if (--this.holders[n] === 0) {
      this.index.delete(this.keys[n]);
      this.free.push(n);
    }
  }
}
