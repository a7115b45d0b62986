// Warm datastore clients for the CNI calls the agent runs for the shim. A CNI plugin started
// per call spends much of its time connecting to the datastore; the agent keeps one client per
// datastore a netconf names (opened on the first call that names it) and lends it to every
// call. The lent client's close() gives it back instead of closing it, so the plugin's code
// stays as it is. A call that finds the datastore unreachable retires the client: the next call
// connects afresh, as a new plugin process would.
import { BackendDatastore, openDatastore, type DatastoreConfig } from '../datastore/index.js';

interface Warm {
  key: string;
  opening: Promise<BackendDatastore>;
  lent: number;
  retired: boolean;
  closed: boolean;
}

class LentStore extends BackendDatastore {
  private returned = false;
  constructor(
    from: BackendDatastore,
    private readonly giveBack: () => void,
  ) {
    super(from.raw);
  }
  override async close(): Promise<void> {
    if (this.returned) return;
    this.returned = true;
    this.giveBack();
  }
}

/**
 * A Redis client given no URL takes its own process's PODROUTE_REDIS_URL, which is the agent's
 * here; the call's own environment is already in the config, so the default is named outright.
 */
function asCalled(config: DatastoreConfig): DatastoreConfig {
  return config.type === 'redis' && config.url === undefined && !config.sentinels?.length
    ? { ...config, url: 'redis://127.0.0.1:6379' }
    : config;
}

export class WarmStores {
  private readonly warm = new Map<string, Warm>();
  private stopped = false;

  /** What one call opens its datastore with; `used` lists what it borrowed, for retire(). */
  opener(): { open: (config: DatastoreConfig) => Promise<BackendDatastore>; used: Warm[] } {
    const used: Warm[] = [];
    const open = async (config: DatastoreConfig): Promise<BackendDatastore> => {
      if (this.stopped) throw new Error('the node agent is stopping');
      const called = asCalled(config);
      // Two netconfs that name the same datastore share its client.
      const key = JSON.stringify(called);
      let w = this.warm.get(key);
      if (!w) {
        const made: Warm = { key, opening: openDatastore(called), lent: 0, retired: false, closed: false };
        // A failed connect is not kept: the next call tries again.
        made.opening.catch(() => {
          if (this.warm.get(key) === made) this.warm.delete(key);
        });
        this.warm.set(key, made);
        w = made;
      }
      const ds = await w.opening;
      const entry = w;
      entry.lent++;
      used.push(entry);
      return new LentStore(ds, () => this.giveBack(entry));
    };
    return { open, used };
  }

  /** The clients a call used when it found the datastore unreachable: closed once no call holds them. */
  retire(used: readonly Warm[]): void {
    for (const w of used) {
      if (w.retired) continue;
      w.retired = true;
      if (this.warm.get(w.key) === w) this.warm.delete(w.key);
      if (w.lent === 0) void this.closeOne(w);
    }
  }

  /** How many datastores have a client open or opening (for tests and status). */
  get size(): number {
    return this.warm.size;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const all = [...this.warm.values()];
    this.warm.clear();
    await Promise.all(all.map((w) => this.closeOne(w)));
  }

  private giveBack(w: Warm): void {
    w.lent--;
    if (w.retired && w.lent === 0) void this.closeOne(w);
  }

  private async closeOne(w: Warm): Promise<void> {
    w.retired = true;
    if (w.closed) return;
    w.closed = true;
    const ds = await w.opening.catch(() => undefined);
    await ds?.close().catch(() => undefined);
  }
}
