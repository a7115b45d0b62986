// Flow logs' conntrack mark: with `FlowLogRules.ctMark`, an Allow rule writes a number naming
// itself into the mark bits given (the lowest of them is the "staged" bit: a staged policy's
// rule met the packet, its decision comes as a logged packet), and the connection's NEW and
// DESTROY events carry it: no logged packet, and no join, per allowed connection. The numbers
// are the process's, given once per rule id and never given again, so that a policy chain the
// compiler kept from an earlier compile still names the rule it named then; an id that finds no
// number left keeps the log rule instead.

const numbers = new Map<string, number>();

/** The mask's layout: where its bits start, the staged bit, the bits of the rule number. */
export interface CtMarkLayout {
  readonly mask: number;
  readonly staged: number;
  /** The rule number's bits (the mask without the staged bit), and how far its number is shifted. */
  readonly numberBits: number;
  readonly shift: number;
  /** Rule numbers the bits hold (1 to this; 0 is "no Allow rule met"). */
  readonly capacity: number;
}

/** What is wrong with `mask` as flow logs' ct mark bits, or undefined when nothing is. */
export function ctMarkError(mask: number): string | undefined {
  if (!Number.isInteger(mask) || mask <= 0 || mask > 0xffffffff) return `${mask} is not a 32-bit mask`;
  const m = mask >>> 0;
  const low = m & -m;
  // Contiguous: adding the lowest bit carries through them all.
  if (((m + low) & m) !== 0) return `0x${m.toString(16)} is not one run of contiguous bits`;
  if (ctMarkLayout(m).capacity < 1) return `0x${m.toString(16)} has fewer than 2 bits`;
  return undefined;
}

export function ctMarkLayout(mask: number): CtMarkLayout {
  const m = mask >>> 0;
  const staged = (m & -m) >>> 0;
  const numberBits = (m & ~staged) >>> 0;
  const shift = Math.log2(staged) + 1;
  return { mask: m, staged, numberBits, shift, capacity: numberBits ? numberBits / 2 ** shift : 0 };
}

/** The number of the rule with counter id `id`, or undefined when the layout has none left for it. */
export function ruleMarkNumber(id: string, layout: CtMarkLayout): number | undefined {
  let n = numbers.get(id);
  if (n === undefined) {
    n = numbers.size + 1;
    // Past 2^24 ids the process keeps logging the rest: no mask holds more.
    if (n > 1 << 24) return undefined;
    numbers.set(id, n);
  }
  return n <= layout.capacity ? n : undefined;
}

/** The rule number a connection's mark carries; 0 when no numbered Allow rule met its first packet. */
export const markRuleNumber = (mark: number, layout: CtMarkLayout): number => ((mark & layout.numberBits) >>> 0) / 2 ** layout.shift;
