// The compiled parts of a table, kept per input object: the calculation graph hands out a new
// object for every set, policy or endpoint that changed and the same one otherwise, and an
// input is never changed once handed out, so a recompile after a pod add rebuilds the one set
// it changed and hands back every other set and chain as the very object it was (which the
// programmer's table state and plan then skip at once). Entries go with their input objects.

export class PartMemo<K extends object, V> {
  private readonly byObject = new WeakMap<K, Map<string, V>>();

  /** The part made from `key` under `variant` (the options its text depends on), if kept. */
  get(key: K, variant: string): V | undefined {
    return this.byObject.get(key)?.get(variant);
  }

  set(key: K, variant: string, value: V): V {
    let variants = this.byObject.get(key);
    if (!variants) this.byObject.set(key, (variants = new Map()));
    variants.set(variant, value);
    return value;
  }
}
