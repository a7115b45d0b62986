// The store-identity guard: IPAM refuses to allocate from a store that is not the one this
// node allocated from before (emptied, replaced or rolled back) until `podroute ipam repair`
// has rebuilt the allocations and marked the store repaired. Without it, a Redis that came back
// empty hands out again every address the pods still hold.
import { readFileSync } from 'node:fs';
import { writePrivateFile } from '../files/index.js';
import type { StoreIdentity } from '../datastore/index.js';

/** Where a caller keeps the identity of the store it last allocated from. */
export interface StoreIdentityRecord {
  load(): Promise<StoreIdentity | undefined>;
  save(identity: StoreIdentity): Promise<void>;
}

/** In a long-lived process (the agent): the identity seen at its first allocation. */
export function memoryIdentityRecord(): StoreIdentityRecord {
  let seen: StoreIdentity | undefined;
  return {
    load: async () => seen,
    save: async (id) => {
      seen = id;
    },
  };
}

/** In a short-lived one (the CNI plugin): a small JSON file, replaced atomically. */
export function fileIdentityRecord(path: string): StoreIdentityRecord {
  return {
    load: async () => {
      try {
        return JSON.parse(readFileSync(path, 'utf8')) as StoreIdentity;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw e;
      }
    },
    // 0600 in a folder no other user can tamper with, whatever the umask: whoever can rewrite
    // the record can make this node allocate from a store that lost its allocations.
    save: async (id) => writePrivateFile(path, `${JSON.stringify(id)}\n`, 'store identity record'),
  };
}

/** Why the store must not be allocated from, or undefined when it is the one seen before (or repaired since). */
export function storeIdentityProblem(seen: StoreIdentity | undefined, now: StoreIdentity): string | undefined {
  if (!seen) return undefined;
  // A repair since the record was made is the operator saying "this store is right now".
  if (now.epoch > seen.epoch) return undefined;
  const before = `store ${seen.storeId ?? '(none)'} at revision ${seen.revision}`;
  const fix = 'run `podroute ipam check`, then `podroute ipam repair`, before allocating again';
  if (now.storeId === null)
    return `the datastore is empty: it lost everything since this node allocated from ${before} (Redis restarted without persistence?); ${fix}`;
  if (now.storeId !== seen.storeId)
    return `the datastore was replaced: it is store ${now.storeId}, this node allocated from ${before} (Redis restarted empty and was written again?); ${fix}`;
  if (now.revision < seen.revision)
    return `the datastore was rolled back to revision ${now.revision}, this node allocated from ${before} (restored from an older snapshot?); ${fix}`;
  return undefined;
}
