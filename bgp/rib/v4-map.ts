// A Map keyed by IPv4 prefix keys that stores no heap number per key. A V4Key
// (address * 64 + length) past 32.0.0.0 is no Smi, so a Map keyed by it boxes each key and
// hashes a double; split by length, each part is keyed by the address as an int32, which V8
// keeps inline. A family's prefix numbers use it, and through them the Loc-RIB's table.
import type { V4Key } from './prefix.js';

export class V4Map<T> {
  private readonly maps: Array<Map<number, T>> = Array.from({ length: 33 }, () => new Map());
  private count = 0;

  get(key: V4Key): T | undefined {
    const len = key % 64;
    return this.maps[len].get(((key - len) / 64) | 0);
  }

  set(key: V4Key, value: T): void {
    const len = key % 64;
    const m = this.maps[len];
    const before = m.size;
    m.set(((key - len) / 64) | 0, value);
    this.count += m.size - before;
  }

  delete(key: V4Key): void {
    const len = key % 64;
    if (this.maps[len].delete(((key - len) / 64) | 0)) this.count--;
  }

  get size(): number {
    return this.count;
  }

  *keys(): IterableIterator<V4Key> {
    for (let len = 0; len <= 32; len++) {
      for (const a of this.maps[len].keys()) yield (a >>> 0) * 64 + len;
    }
  }

  forEach(fn: (value: T, key: V4Key) => void): void {
    for (let len = 0; len <= 32; len++) {
      for (const [a, value] of this.maps[len]) fn(value, (a >>> 0) * 64 + len);
    }
  }
}
