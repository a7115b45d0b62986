// The change journal of one family: the prefixes whose paths changed, in order, once each.
// Every Adj-RIB-Out of the family reads it from its own cursor, so a change costs one entry
// however many peers there are, instead of an entry in a pending set per peer. A prefix that
// changes again moves to the end (its old entry becomes a hole), so a slow reader meets it
// once with the latest state, and the journal never holds more live entries than prefixes.
import type { PrefixKey } from './prefix.js';

/** One reader's place in the journal (an Adj-RIB-Out's family). */
export interface JournalReader {
  /** Index of the next entry to read. */
  cursor: number;
  /**
   * In the journal's idle list: caught up, and every entry since was of no concern to it (the
   * RIB wakes an idle reader only for entries that may change what its peer has), so
   * compaction may move its cursor to the end.
   */
  idle: boolean;
}

export class Journal {
  /** Changed prefixes; undefined where the prefix changed again later. */
  keys: Array<PrefixKey | undefined> = [];
  /** Per entry: whether the best path (or ECMP set) changed, not only a path behind it (ADD-PATH readers only). */
  best: boolean[] = [];
  readonly readers = new Set<JournalReader>();
  /** Readers caught up and waiting for an entry that concerns them. */
  idle: JournalReader[] = [];
  private readonly at = new Map<PrefixKey, number>();
  private compactAt = 4096;

  get end(): number {
    return this.keys.length;
  }

  append(key: PrefixKey, bestChanged: boolean): void {
    const i = this.at.get(key);
    if (i !== undefined) {
      bestChanged ||= this.best[i];
      this.keys[i] = undefined;
    }
    this.at.set(key, this.keys.length);
    this.keys.push(key);
    this.best.push(bestChanged);
    if (this.keys.length >= this.compactAt) this.compact();
  }

  /** Live entries from a cursor to the end. */
  liveFrom(cursor: number, bestOnly: boolean): number {
    let n = 0;
    for (let i = cursor; i < this.keys.length; i++) if (this.keys[i] !== undefined && (!bestOnly || this.best[i])) n++;
    return n;
  }

  add(r: JournalReader): void {
    r.cursor = this.keys.length;
    r.idle = false;
    this.readers.add(r);
  }

  remove(r: JournalReader): void {
    this.readers.delete(r);
    if (r.idle) this.idle = this.idle.filter((x) => x !== r);
    r.idle = false;
  }

  /** Drops what every reader has read and the holes, and renumbers the cursors. */
  private compact(): void {
    const end = this.keys.length;
    let min = end;
    for (const r of this.readers) {
      if (r.idle) r.cursor = end;
      else if (r.cursor < min) min = r.cursor;
    }
    const keys: Array<PrefixKey | undefined> = [];
    const best: boolean[] = [];
    const renumber = new Int32Array(end - min + 1);
    this.at.clear();
    for (let i = min; i < end; i++) {
      renumber[i - min] = keys.length;
      const k = this.keys[i];
      if (k === undefined) continue;
      this.at.set(k, keys.length);
      keys.push(k);
      best.push(this.best[i]);
    }
    renumber[end - min] = keys.length;
    for (const r of this.readers) r.cursor = renumber[r.cursor - min];
    this.keys = keys;
    this.best = best;
    this.compactAt = Math.max(4096, 2 * keys.length);
  }
}
