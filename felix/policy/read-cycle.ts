// Which part of the table each read of a cycle checks against the kernel, when felix's copy of
// the table answers the reads: the table cut into slices of about equal cost, so that a cycle of
// that many reads has read every set, map and chain once and no read carries much more than
// its share (a whole read at once was a resync's tail).
import type { TableSlice } from './nftnl-read.js';

/**
 * What reading each costs, in about a microsecond of a kernel dump and its parse (measured on
 * a services table): a dump's round trip, an element, a rule, a chain's head.
 */
const ROUND_TRIP = 40;
const ELEMENT = 1;
const RULE = 2;
const CHAIN_HEAD = 5;

/**
 * The slices of one cycle of `reads` reads: the first also reads every chain's head (names and
 * bases), then the sets and maps, then the chains, each in the slice where its cost starts.
 */
export function readCycle(sizes: { sets: readonly [string, number][]; chains: readonly [string, number][] }, reads: number): TableSlice[] {
  const slices = Array.from({ length: reads }, (_, i) => ({ sets: [] as string[], chains: [] as string[], heads: i === 0 }));
  const items: { name: string; set: boolean; cost: number }[] = [];
  let total = ROUND_TRIP + CHAIN_HEAD * sizes.chains.length;
  for (const [name, n] of sizes.sets) items.push({ name, set: true, cost: ROUND_TRIP + ELEMENT * n });
  for (const [name, n] of sizes.chains) items.push({ name, set: false, cost: ROUND_TRIP + RULE * n });
  for (const i of items) total += i.cost;
  const share = total / reads;
  let at = ROUND_TRIP + CHAIN_HEAD * sizes.chains.length;
  for (const i of items) {
    const s = slices[Math.min(reads - 1, Math.floor(at / share))];
    (i.set ? s.sets : s.chains).push(i.name);
    at += i.cost;
  }
  return slices;
}
