// The embedded datastore of the command line: the memory backend, loaded from a JSON file and
// written back when the command ends, so `podroute apply` then `podroute get` work with nothing
// installed. One invocation at a time holds the file's lock from load to save, so two applies
// at once are serialized and neither loses the other's writes; the save is a whole new file
// renamed over the old one, so a crash leaves the old state or the new, never half of either.
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { KINDS, type Kind } from '../resources/index.js';
import { BackendDatastore } from './datastore.js';
import type { Durability } from './durability.js';
import { MemoryBackend } from './memory.js';

/** Where the file lives unless told: $PODROUTE_STATE_DIR, /var/lib/podroute for root, else the XDG state directory. */
export function defaultDatastoreFile(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PODROUTE_STATE_DIR) return join(env.PODROUTE_STATE_DIR, 'datastore.json');
  if (process.getuid?.() === 0) return '/var/lib/podroute/datastore.json';
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'podroute', 'datastore.json');
}

interface FileState {
  podrouteDatastore: 1;
  /** The store's revision: the next write gets a higher one. */
  revision: number;
  items: { kind: Kind; key: string; revision: number; json: string }[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Takes `<file>.lock` (O_EXCL), waiting up to waitMs; a lock whose process is gone is taken over. */
async function lock(path: string, waitMs: number): Promise<() => void> {
  const lockPath = `${path}.lock`;
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      const fd = openSync(lockPath, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(lockPath, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new Error(`datastore lock ${lockPath}: ${(e as Error).message}`);
    }
    let holder = Number.NaN;
    try {
      holder = Number(readFileSync(lockPath, 'utf8'));
    } catch {}
    if (Number.isInteger(holder) && holder > 0 && !alive(holder)) {
      rmSync(lockPath, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`datastore ${path}: locked by process ${holder} for more than ${waitMs} ms (${lockPath})`);
    await sleep(10 + Math.random() * 20);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

class FileBackend extends MemoryBackend {
  private loadedAt = 0;
  constructor(
    readonly path: string,
    private readonly release: () => void,
  ) {
    super();
  }

  async load(): Promise<void> {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw e;
    }
    const state = JSON.parse(text) as FileState;
    if (state?.podrouteDatastore !== 1 || !Array.isArray(state.items) || !Number.isInteger(state.revision))
      throw new Error(`${this.path}: not a podroute datastore file (podrouteDatastore: 1, revision and items expected)`);
    this.restore(state.items, state.revision);
    this.loadedAt = await this.revision();
  }

  override async durability(): Promise<Durability> {
    return { store: 'file', durable: true, path: this.path };
  }

  /** Saves what changed, then lets the next invocation in. */
  override async close(): Promise<void> {
    try {
      if ((await this.revision()) !== this.loadedAt) {
        const snap = await this.snapshot(KINDS);
        const state: FileState = { podrouteDatastore: 1, revision: snap.revision, items: snap.items };
        const tmp = `${this.path}.${process.pid}.tmp`;
        writeFileSync(tmp, `${JSON.stringify(state, null, 1)}\n`, { mode: 0o600 });
        renameSync(tmp, this.path);
      }
    } finally {
      this.release();
      await super.close();
    }
  }
}

/** The datastore in `path`, locked until close() (which saves it). Creates the directory. */
export async function openFileDatastore(path: string, waitMs = 30_000): Promise<BackendDatastore> {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const release = await lock(path, waitMs);
  const backend = new FileBackend(path, release);
  try {
    await backend.load();
  } catch (e) {
    release();
    throw e;
  }
  return new BackendDatastore(backend);
}
