// What an IPAM step does to one block or handle, the same in every backend that holds them as
// JSON objects (memory, etcd; Redis does the same in Lua): a new affine block, an address
// taken for a handle, a handle's addresses given back. Pure: the backend loads, calls these,
// and writes the result in its own atomic step.
import { API_VERSION, type IPAMBlock, type IPAMHandle } from '../resources/index.js';
import type { AssignRequest, ClaimCandidate } from './ipam-store.js';

/** A block of `c` claimed for `node`, every address free. */
export function newBlock(c: ClaimCandidate, node: string, strictAffinity: boolean): IPAMBlock {
  return {
    apiVersion: API_VERSION,
    kind: 'IPAMBlock',
    metadata: { name: c.name },
    spec: {
      cidr: c.cidr,
      affinity: `host:${node}`,
      allocations: new Array<null>(c.size).fill(null),
      unallocated: Array.from({ length: c.size }, (_, i) => i),
      attributes: [],
      strictAffinity,
    },
  };
}

/** Takes the block's first free ordinal for the request; undefined when it is full. */
export function takeAddress(b: IPAMBlock, req: AssignRequest): number | undefined {
  const s = b.spec;
  const ordinal = s.unallocated.shift();
  if (ordinal === undefined) return undefined;
  s.attributes.push({ handle_id: req.handle, secondary: JSON.parse(req.attrs) as Record<string, string> });
  s.allocations[ordinal] = s.attributes.length - 1;
  return ordinal;
}

/** The handle (read from `json`, or new) with one more address in the block `cidr`. */
export function handleWithAddress(json: string | undefined, handle: string, cidr: string): IPAMHandle {
  const h: IPAMHandle = json
    ? (JSON.parse(json) as IPAMHandle)
    : { apiVersion: API_VERSION, kind: 'IPAMHandle', metadata: { name: handle }, spec: { handleID: handle, block: {} } };
  if (typeof h.spec.block !== 'object' || h.spec.block === null) h.spec.block = {};
  h.spec.block[cidr] = (h.spec.block[cidr] ?? 0) + 1;
  return h;
}

/**
 * Frees every address the handle holds in the block, keeping only the attributes still
 * referenced (allocations renumbered). Returns the ordinals freed.
 */
export function releaseHandle(b: IPAMBlock, handle: string): number[] {
  const s = b.spec;
  const freed: number[] = [];
  s.allocations.forEach((a, ord) => {
    if (a !== null && s.attributes[a]?.handle_id === handle) {
      s.allocations[ord] = null;
      s.unallocated.push(ord);
      freed.push(ord);
    }
  });
  const used = new Set(s.allocations.filter((a): a is number => a !== null));
  const renumber = new Map<number, number>();
  const attrs: typeof s.attributes = [];
  s.attributes.forEach((attr, i) => {
    if (used.has(i)) {
      renumber.set(i, attrs.length);
      attrs.push(attr);
    }
  });
  s.allocations = s.allocations.map((a) => (a === null ? null : renumber.get(a)!));
  s.attributes = attrs;
  return freed;
}
