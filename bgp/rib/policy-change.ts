// A peer's export policy changes while its session is up. It moves to the update group of its
// new policy and is sent its table again, as after a route refresh; what it had from us that
// the new policy no longer sends is withdrawn. What it had is read from its Adj-RIB-Out before
// it leaves the old group, as prefixes (and ADD-PATH ids), not as sets: sets are a group's own.
import type { AddressFamily } from '../codec/index.js';
import type { AdjRibOut } from './adj-rib-out.js';
import { Bucket, emitWithdraw } from './out-messages.js';
import type { PrefixKey } from './prefix.js';
import { localPathId, type Path } from './table.js';

/** Per family: the prefixes a peer has from us, each with the ADD-PATH ids it has (0 without ADD-PATH). */
export type SentRecord = Map<AddressFamily, Map<PrefixKey, number[]>>;

export function sentRecord(out: AdjRibOut): SentRecord {
  const record: SentRecord = new Map();
  out.fams.forEach((f, i) => {
    const had = new Map<PrefixKey, number[]>();
    if (f.addPath) for (const [key, s] of f.paths) had.set(key, [...s.ids]);
    else {
      // In a subgroup the record is the subgroup's: the prefixes whose best path came from this peer it never had.
      const own = out.subgroup !== undefined ? out.own[i] : undefined;
      const n = Math.min(f.sent.length, f.slots.capacity);
      for (let k = 0; k < n; k++) if (f.sent[k] !== 0 && own?.has(k) !== true) had.set(f.slots.keys[k], [0]);
    }
    record.set(f.family, had);
  });
  return record;
}

/** The withdrawals `out`, the peer's new Adj-RIB-Out, owes: what `before` holds that its group no longer sends. */
export function withdrawalsAfter(out: AdjRibOut, before: SentRecord): Buffer[] {
  const buffers: Buffer[] = [];
  for (const f of out.fams) {
    const had = before.get(f.family);
    if (had === undefined) continue;
    const wd = new Bucket();
    for (const [key, ids] of had) {
      const kept = new Set<number>();
      // Without ADD-PATH the best path alone is sent; with it, every path the group exports.
      for (let p: Path | null = f.table.get(key) ?? null; p !== null; p = f.addPath ? p.next : null) {
        if (out.exportable(f, key, p) !== null) kept.add(f.addPath ? localPathId(p) : 0);
      }
      for (const id of ids) {
        if (kept.has(id)) continue;
        wd.keys.push(key);
        wd.ids.push(id);
      }
    }
    if (wd.keys.length > 0) {
      out.stats.withdrawn += wd.keys.length;
      emitWithdraw(f, out.maxMessageLength, wd, buffers);
    }
  }
  return buffers;
}
