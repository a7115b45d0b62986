// Where the plugin keeps the identity of the store this node last allocated from. The plugin
// lives for one call, so the record is a file on the node: it survives the store (a Node
// annotation would vanish with the very store it guards). One file per datastore and node.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { DatastoreConfig } from '../datastore/index.js';

/** Default state directory; PODROUTE_CNI_STATE_DIR overrides it. */
export const CNI_STATE_DIR = '/var/lib/podroute/cni';

export function identityRecordPath(ds: DatastoreConfig, node: string, env: NodeJS.ProcessEnv): string {
  const where =
    ds.type === 'redis'
      ? `${ds.url ?? ''}|${(ds.sentinels ?? []).map((s) => `${s.host}:${s.port}`).join(',')}|${ds.name ?? 'default'}`
      : ds.type === 'etcd'
        ? `etcd|${[...ds.endpoints].sort().join(',')}|${ds.prefix ?? ds.name ?? 'default'}`
        : 'memory';
  const key = createHash('sha256').update(`${where}|${node}`).digest('hex').slice(0, 16);
  return join(env.PODROUTE_CNI_STATE_DIR ?? CNI_STATE_DIR, `store-identity-${key}.json`);
}
