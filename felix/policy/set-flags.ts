// A set's flags, decided in one place for every writer and reader of the table. A set with a
// timeout is the packet path's (session affinity's `update @set`): nft wants it declared
// `dynamic,timeout`, and lists it back as `timeout` (some versions add `dynamic`), so the form
// we compare is the listed one without `dynamic`, in nft's order (`interval` first).

interface SetKind {
  readonly interval: boolean;
  readonly timeout?: number;
}

/** The flags to declare (`flags …;`), or '' for none. */
export function declaredSetFlags(s: SetKind): string {
  if (s.timeout !== undefined) return `${s.interval ? 'interval,' : ''}dynamic,timeout`;
  return s.interval ? 'interval' : '';
}

/** The flags as a set reads back and is compared. */
export function comparedSetFlags(s: SetKind): string[] {
  return [...(s.interval ? ['interval'] : []), ...(s.timeout !== undefined ? ['timeout'] : [])];
}

/** The flags nft listed, in the compared form. */
export function listedSetFlags(flags: readonly string[]): string[] {
  return flags.filter((f) => f !== 'dynamic').sort();
}
