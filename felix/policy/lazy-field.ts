// A field of a plain object whose list is made only when someone reads it, from the shared
// structure a change produced (SortedTexts, NamedList): the steps after the compile work on the
// recorded change, so on the hot path the whole list is never made.

/** What a lazy field reads its list from. */
export interface ListSource {
  list(): readonly unknown[];
}

// The source rides on the object under a symbol, not enumerable: spreads, JSON and deep
// comparison do not see it, and the getter reads it as a plain field (a WeakMap lookup on every
// read of a set's members showed in the steps that read them).
const SOURCE = Symbol('list source');
type Carrier = { readonly [SOURCE]?: ListSource };

// One getter for every object and field: an accessor defined on a key the object does not have
// yet keeps V8's fast shape, shared by all such objects; turning an existing field into an
// accessor, or a getter made per object, gives each object its own dictionary (a few hundred
// bytes an object, on every change).
const byField = new Map<string, PropertyDescriptor>();
function descriptor(field: string): PropertyDescriptor {
  let d = byField.get(field);
  if (!d) {
    d = {
      get(this: Carrier) {
        return this[SOURCE]?.list();
      },
      enumerable: true,
      configurable: true,
    };
    byField.set(field, d);
  }
  return d;
}

/**
 * A copy of `o` with `field` read from `source` on first use (an enumerable property like any
 * other, so spreads, JSON and deep comparison see the list). `o` must already have the field,
 * so that its place among the keys stays.
 */
export function withLazyList<T extends object>(o: T, field: keyof T & string, source: ListSource): T {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(o)) {
    if (key === field) Object.defineProperty(out, key, descriptor(field));
    else out[key] = (o as Record<string, unknown>)[key];
  }
  Object.defineProperty(out, SOURCE, { value: source });
  return out as T;
}

/** The source `o`'s lazy field reads from, if it has one. */
export function lazySource(o: object): ListSource | undefined {
  return (o as Carrier)[SOURCE];
}
