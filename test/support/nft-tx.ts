// Comparing what the policy programmer does, for the tests that check a change record against
// the whole-table path: a transaction as what it does, and whether a table's chains were read.
import type { NftOp } from '../../felix/policy/dataplane.js';
import type { NftChain } from '../../felix/policy/nft-model.js';

/** A transaction as a sorted list of operations, each with its lists sorted: what it does, whatever the order it says it in. */
export function transactionOps(tx: readonly NftOp[]): string[] {
  return tx
    .map((op) => {
      const o: Record<string, unknown> = { ...op };
      for (const k of ['elements', 'keys']) if (Array.isArray(o[k])) o[k] = (o[k] as unknown[]).map((e) => JSON.stringify(e)).sort();
      return JSON.stringify(o);
    })
    .sort();
}

/**
 * Counts the reads of a table's or part's chains (a programmer taking it whole reads them; one
 * taking its change does not). A lazy `chains` getter keeps working behind the count.
 */
export function watchChains(t: { readonly chains: readonly NftChain[] }): { reads: number } {
  const seen = { reads: 0 };
  const read = Object.getOwnPropertyDescriptor(t, 'chains')!;
  Object.defineProperty(t, 'chains', {
    get() {
      seen.reads++;
      return read.get ? read.get.call(t) : read.value;
    },
    configurable: true,
    enumerable: true,
  });
  return seen;
}
