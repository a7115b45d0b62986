// Whether a store keeps what it has acknowledged, and how: the store's own answer. IPAM counts
// an address as taken once the store acknowledges it; a store that comes back without it hands
// the address out a second time, so the agent asks at start and names the risk.
import type { RedisPersistence } from './redis-persistence.js';

export type Durability =
  /** In this process's memory: every write is gone when the process ends. */
  | { readonly store: 'memory'; readonly durable: false }
  /**
   * The command line's JSON file, written whole (a new file renamed over the old) when the
   * command ends: a crash before then loses that command's writes, never the file.
   */
  | { readonly store: 'file'; readonly durable: true; readonly path: string }
  /**
   * Redis as it is configured: an append-only file ('aof'), RDB snapshots alone ('rdb') or
   * nothing ('none'). Durable unless `persistence.risk` names what a restart can lose.
   */
  | {
      readonly store: 'redis';
      readonly durable: boolean;
      readonly mode: 'aof' | 'rdb' | 'none';
      readonly persistence: RedisPersistence;
    }
  /**
   * etcd acknowledges a write once a majority of members has it on disk: durable always, but
   * with fewer than three members the loss of one loses the store or stops its writes.
   */
  | { readonly store: 'etcd'; readonly durable: true; readonly members: number };
