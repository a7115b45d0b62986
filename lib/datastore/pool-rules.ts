// The rules between pools: no two pools share an address, and a pool's CIDR and block size
// never change once it exists (its blocks were carved with them). Pure, so the write path and
// a whole file checked before its first write apply the same rules.
import { cidrsOverlap, parseCidr } from '../../ip/index.js';
import { type IPPool, ValidationError } from '../resources/index.js';

/** The first rule `pool` breaks against `others` (pools by any name, its own earlier self included). */
export function poolConflict(pool: IPPool, others: readonly IPPool[]): ValidationError | undefined {
  const where = `IPPool/${pool.metadata.name}`;
  const mine = parseCidr(pool.spec.cidr, 'spec.cidr');
  for (const other of others) {
    if (other.metadata.name === pool.metadata.name) {
      if (other.spec.cidr !== pool.spec.cidr)
        return new ValidationError(
          'spec.cidr',
          `cannot change the CIDR of an existing pool (${other.spec.cidr}); create a new pool and disable this one`,
          where,
        );
      if (other.spec.blockSize !== pool.spec.blockSize)
        return new ValidationError('spec.blockSize', `cannot change the block size of an existing pool (${other.spec.blockSize})`, where);
      continue;
    }
    if (cidrsOverlap(mine, parseCidr(other.spec.cidr, 'spec.cidr')))
      return new ValidationError('spec.cidr', `${pool.spec.cidr} overlaps pool ${other.metadata.name} (${other.spec.cidr})`, where);
  }
  return undefined;
}

/**
 * Checks a batch of pools (one file) before any is written: each against the stored pools it
 * does not replace and against the batch's earlier pools, so a file whose third pool overlaps
 * its first is refused whole instead of leaving the first written.
 */
export function batchPoolConflict(batch: readonly IPPool[], stored: readonly IPPool[]): ValidationError | undefined {
  const accepted: IPPool[] = [];
  for (const pool of batch) {
    const known = [...stored.filter((s) => !accepted.some((a) => a.metadata.name === s.metadata.name)), ...accepted];
    const bad = poolConflict(pool, known);
    if (bad) return bad;
    const i = accepted.findIndex((a) => a.metadata.name === pool.metadata.name);
    if (i >= 0) accepted.splice(i, 1);
    accepted.push(pool);
  }
  return undefined;
}
