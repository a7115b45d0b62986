// What a transaction planned from no table makes, recorded on the transaction by its planner:
// the desired state, keyed as a read gives it. A dataplane that keeps a copy of the kernel's
// table, and knows that the kernel held no table when the transaction committed, takes this as
// the copy instead of replaying the transaction: a load of the services benchmark's table
// (22,018 rules, 121,000 map elements) replayed cost 0.07-0.28 s, where the state is already made.
import type { InstalledTable, NftOp } from './dataplane.js';

const made = new WeakMap<readonly NftOp[], InstalledTable>();

/**
 * Says that `ops`, applied to no table, make `table`: what the kernel then holds reads back as
 * it (a map's typeof aside, which a read has not). Neither `table`'s maps nor the objects in
 * them may change after: a dataplane may keep them as its copy of the kernel's table.
 */
export function recordPlannedTable(ops: readonly NftOp[], table: InstalledTable): void {
  made.set(ops, table);
}

/** The table `ops` make from no table, when their planner recorded it. */
export function plannedTable(ops: readonly NftOp[]): InstalledTable | undefined {
  return made.get(ops);
}
