// The change journal of one family: the prefixes whose paths changed, in order, once each.
// Every Adj-RIB-Out of the family reads it from its own cursor, so a change costs one entry
// however many peers there are, instead of an entry in a pending set per peer. A prefix that
// changes again moves to the end (its old entry becomes a hole), so a slow reader meets it
// once with the latest state, and the journal never holds more live entries than prefixes.
//
// An entry is the prefix's number in the family's PrefixSlots, not its key: where a prefix's
// entry is, is then an array index, not a Map lookup keyed by a number too large to be a Smi
// (every IPv4 key past 32.0.0.0 is a heap number), which cost a fifth of the speaker's CPU.
// The journal holds the number of every prefix it has an entry for.
import type { PrefixKey } from './prefix.js';
import type { PrefixSlots } from './slots.js';

/** One reader's place in the journal (an Adj-RIB-Out's family). */
export interface JournalReader {
  /** Index of the next entry to read. */
  cursor: number;
  /** Live entries from the cursor on that concern this reader: what it still has to read. */
  pending: number;
  /** Reads the entries where only a path behind the best changed too (ADD-PATH). */
  readonly addPath: boolean;
  /**
   * In the journal's idle list: caught up, and every entry since was of no concern to it (the
   * RIB wakes an idle reader only for entries that may change what its peer has), so its
   * cursor may move past them.
   */
  idle: boolean;
  /** Its index in the idle list or the active list, whichever holds it. */
  place: number;
}

const NONE = -1;

export class Journal {
  /** Per entry: the prefix's number; NONE where the prefix changed again later. */
  entries: Int32Array = new Int32Array(4096);
  /** Per entry: 1 when the best path (or ECMP set) changed, not only a path behind it (ADD-PATH readers only). */
  best: Uint8Array = new Uint8Array(4096);
  /** Entries in use. */
  end = 0;
  /** Readers caught up and waiting for an entry that concerns them. */
  readonly idle: JournalReader[] = [];
  /** The other readers: each append counts towards their pending. */
  readonly active: JournalReader[] = [];
  /** Counts readers going idle or leaving the idle list other than by wake(). */
  idleChanges = 0;
  /** Per prefix number: its entry, NONE when it has none. */
  private at: Int32Array = new Int32Array(1024).fill(NONE);
  private compactAt = 4096;

  constructor(readonly prefixes: PrefixSlots) {}

  /** Records a change of the prefix; returns its number. */
  append(key: PrefixKey, bestChanged: boolean): number {
    const slots = this.prefixes;
    let n = slots.get(key);
    let best = bestChanged ? 1 : 0;
    let old = NONE;
    let oldBest = 0;
    if (n !== undefined && n < this.at.length && this.at[n] !== NONE) {
      // Its entry moves to the end; the journal's hold on the number moves with it.
      old = this.at[n];
      oldBest = this.best[old];
      best |= oldBest;
      this.entries[old] = NONE;
    } else {
      n = n === undefined ? slots.add(key) : slots.hold(n);
      if (n >= this.at.length) this.at = grownFilled(this.at, Math.max(2 * this.at.length, n + 1));
    }
    if (this.end >= this.entries.length) {
      const e = new Int32Array(2 * this.entries.length);
      e.set(this.entries);
      this.entries = e;
      const b = new Uint8Array(2 * this.best.length);
      b.set(this.best);
      this.best = b;
    }
    const i = this.end++;
    this.entries[i] = n;
    this.best[i] = best;
    this.at[n] = i;
    const active = this.active;
    for (let r = 0; r < active.length; r++) {
      const x = active[r];
      if (best === 0 && !x.addPath) continue;
      // The new entry is ahead of every reader; the old one, now a hole, was ahead of some,
      // and counted for them already unless only a path behind the best had changed.
      if (old === NONE || x.cursor > old || (oldBest === 0 && !x.addPath)) x.pending++;
    }
    if (this.end >= this.compactAt) this.compact();
    return n;
  }

  add(r: JournalReader): void {
    r.cursor = this.end;
    r.pending = 0;
    r.idle = false;
    r.place = this.active.length;
    this.active.push(r);
  }

  /** O(1): a mass flap closes every session at once. */
  remove(r: JournalReader): void {
    if (r.idle) this.idleChanges++;
    const list = r.idle ? this.idle : this.active;
    const i = r.place;
    if (list[i] === r) {
      const last = list.pop()!;
      if (last !== r) {
        list[i] = last;
        last.place = i;
      }
    }
    r.idle = false;
    r.place = NONE;
    r.pending = 0;
  }

  /** The reader has read everything that concerns it. */
  sleep(r: JournalReader): void {
    if (r.idle) return;
    this.remove(r);
    r.idle = true;
    r.pending = 0;
    r.place = this.idle.length;
    this.idle.push(r);
    this.idleChanges++;
  }

  /**
   * Wakes an idle reader for the entry just appended, which concerns it. Every entry since it
   * went idle did not (or it would have been woken then), so it starts at this one.
   * The caller takes it out of the idle list (the RIB sweeps the list in place).
   */
  wake(r: JournalReader): void {
    r.idle = false;
    r.cursor = this.end - 1;
    r.pending = 1;
    r.place = this.active.length;
    this.active.push(r);
  }

  /** Drops what every reader has read and the holes, and renumbers the cursors. */
  private compact(): void {
    const end = this.end;
    let min = end;
    for (const r of this.active) if (r.cursor < min) min = r.cursor;
    const entries = this.entries;
    const best = this.best;
    const at = this.at;
    const slots = this.prefixes;
    for (let i = 0; i < min; i++) {
      const n = entries[i];
      if (n === NONE) continue;
      at[n] = NONE;
      slots.release(n);
    }
    const renumber = new Int32Array(end - min + 1);
    let kept = 0;
    for (let i = min; i < end; i++) {
      renumber[i - min] = kept;
      const n = entries[i];
      if (n === NONE) continue;
      entries[kept] = n;
      best[kept] = best[i];
      at[n] = kept++;
    }
    renumber[end - min] = kept;
    for (const r of this.active) r.cursor = renumber[r.cursor - min];
    // An idle reader's cursor is past all that concerns it; wake() sets it again.
    for (const r of this.idle) r.cursor = kept;
    this.end = kept;
    this.compactAt = Math.max(4096, 2 * kept);
  }
}

function grownFilled(a: Int32Array, length: number): Int32Array {
  const b = new Int32Array(length).fill(NONE);
  b.set(a);
  return b;
}
