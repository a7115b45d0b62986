// A cluster cache kept by a real watch of a datastore, as the agent keeps its own: for tests of
// the parts that read the cache.
import { CLUSTER_KINDS, ClusterCache } from '../../../lib/agent/cluster-cache.js';
import type { BackendDatastore, Watcher } from '../../../lib/datastore/index.js';
import { waitFor } from '../../support/wait.js';

export interface FollowedCache {
  cache: ClusterCache;
  watcher: Watcher;
  /** Resolves once the cache holds what the store held when called. */
  caughtUp(): Promise<void>;
}

export async function followCluster(ds: BackendDatastore, nodeName: string): Promise<FollowedCache> {
  const cache = new ClusterCache(nodeName);
  const watcher = ds.watch({ kinds: CLUSTER_KINDS });
  watcher.on('event', (e) => cache.apply(e));
  const caughtUp = async () => {
    const want = await ds.revision();
    await waitFor(() => watcher.revision, { what: `cache at revision ${want}`, until: (r) => r >= want, intervalMs: 10 });
  };
  await caughtUp();
  return { cache, watcher, caughtUp };
}
