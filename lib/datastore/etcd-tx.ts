// Optimistic transactions over etcd, for IPAM's multi-object steps: read what the step needs
// (remembering each key's mod revision), decide in JavaScript, then commit every write in one
// etcd transaction that compares the mod revision of each key the decision rested on (0 for
// a key that was absent). If any changed meanwhile, nothing is written and the step runs
// again on fresh reads. Reads that only narrow a search (a node's affinity list, the blocks
// tried in turn) are not compared unless the step then depends on them.
import type { Kind } from '../resources/index.js';
import { txn, type Compare, type Op } from './etcd-client.js';
import type { EtcdBackend, StoreBase } from './etcd.js';
import { DatastoreError } from './errors.js';

const LOAD_SLICE = 100;

interface Read {
  mod: number;
  value: string | undefined;
}

export class EtcdTx {
  private readonly reads = new Map<string, Read>();
  private readonly compared = new Set<string>();
  private readonly writes = new Map<string, string | null>();

  constructor(
    private readonly backend: EtcdBackend,
    readonly store: StoreBase,
  ) {}

  /** Loads these keys (one round trip for those not read yet); `compare`: the step depends on them. */
  async load(keys: readonly string[], compare = true): Promise<void> {
    const missing = [...new Set(keys)].filter((k) => !this.reads.has(k));
    // In slices: etcd refuses a transaction of more than --max-txn-ops (default 128) operations.
    for (let at = 0; at < missing.length; at += LOAD_SLICE) {
      const slice = missing.slice(at, at + LOAD_SLICE);
      const r = await txn(
        this.backend.client,
        [],
        slice.map((k): Op => ({ get: k })),
      );
      slice.forEach((k, i) => {
        const kv = r.results[i]![0];
        this.reads.set(k, { mod: kv?.modRevision ?? 0, value: kv?.value });
      });
    }
    if (compare) for (const k of keys) this.compared.add(k);
  }

  /** The step's decision rests on this key as loaded. */
  depend(key: string): void {
    if (!this.reads.has(key)) throw new Error(`etcd tx: ${key} was not loaded`);
    this.compared.add(key);
  }

  /** The value as this step sees it: its own writes first, then what it loaded. */
  value(key: string): string | undefined {
    const w = this.writes.get(key);
    if (w !== undefined) return w ?? undefined;
    if (!this.reads.has(key)) throw new Error(`etcd tx: ${key} was not loaded`);
    return this.reads.get(key)!.value;
  }

  async get(key: string, compare = true): Promise<string | undefined> {
    await this.load([key], compare);
    return this.value(key);
  }

  /** Keys under a prefix (not compared: compare a version stamp such as P/kr/<Kind> instead). */
  async keysUnder(prefix: string): Promise<string[]> {
    const r = await txn(this.backend.client, [], [{ getPrefix: prefix }]);
    for (const kv of r.results[0]!) if (!this.reads.has(kv.key)) this.reads.set(kv.key, { mod: kv.modRevision, value: kv.value });
    return r.results[0]!.map((kv) => kv.key);
  }

  put(key: string, value: string): void {
    this.writes.set(key, value);
  }

  del(key: string): void {
    this.writes.set(key, null);
  }

  /** A resource write: the object and its kind's change stamp (what watchers and guards see). */
  putObject(kind: Kind, key: string, json: string): void {
    this.put(this.backend.keys.kv(kind, key), json);
    this.put(this.backend.keys.kr(kind), '');
  }

  delObject(kind: Kind, key: string): void {
    this.del(this.backend.keys.kv(kind, key));
    this.put(this.backend.keys.kr(kind), '');
  }

  get dirty(): boolean {
    return this.writes.size > 0;
  }

  /** Writes everything if nothing it depends on changed; false if something did (run the step again). */
  async commit(): Promise<boolean> {
    const compares: Compare[] = [this.backend.sameStore(this.store)];
    for (const k of this.compared) compares.push({ key: k, target: 'Mod', result: 'Equal', value: this.reads.get(k)!.mod });
    const ops: Op[] = [];
    for (const [k, v] of this.writes) {
      // Deleting a key that is not there would still be a no-op op; skip it.
      if (v === null && this.reads.has(k) && this.reads.get(k)!.value === undefined) continue;
      ops.push(v === null ? { del: k } : { put: k, value: v });
    }
    const r = await txn(this.backend.client, compares, ops, [{ get: this.backend.keys.id }]);
    if (r.succeeded) {
      this.backend.wrote(r.revision);
      return true;
    }
    if (r.results[0]![0]?.value !== this.store.id) this.backend.forgetStore();
    return false;
  }
}

/** How many times a step runs before giving up: contention, not failure, is the usual cause. */
const MAX_TRIES = 200;

/** Runs `step` until it commits (or writes nothing), backing off with jitter between tries. */
export async function runTx<T>(backend: EtcdBackend, what: string, step: (tx: EtcdTx) => Promise<T>): Promise<T> {
  for (let attempt = 0; attempt < MAX_TRIES; attempt++) {
    const tx = new EtcdTx(backend, await backend.ensureStore());
    const result = await step(tx);
    if (!tx.dirty || (await tx.commit())) return result;
    await new Promise((r) => setTimeout(r, Math.random() * Math.min(2 ** attempt, 50)));
  }
  throw new DatastoreError(`etcd: ${what} lost the race ${MAX_TRIES} times in a row; try again`, 'Conflict');
}
