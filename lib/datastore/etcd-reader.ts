// A watch's view of an etcd store: head and snapshot are reads through the backend's client;
// read() follows one etcd watch on the prefix, on a client of its own, started at the revision
// after the last one returned (etcd keeps history, so a watch resumed after a disconnect gets
// exactly the changes it missed, once). Events of one transaction share a revision and arrive
// in one watch response, so read() never splits them. A watch that etcd cancels because its
// start revision was compacted throws LogTrimmedError (the watcher lists and diffs); any other
// failure of the stream drops the client, and the next read starts a new watch from where the
// last one stopped.
import type { Etcd3, IKeyValue, IWatchResponse, Watcher as EtcdWatcher } from 'etcd3';
import type { Kind } from '../resources/index.js';
import { LogTrimmedError, type LogEntry, type LogReader, type RawSnapshot } from './backend.js';
import { newEtcdClient, unavailable } from './etcd-client.js';
import type { EtcdBackend } from './etcd.js';
import { DatastoreError } from './errors.js';

/** A watch that does not say "created" within this long is dropped and started again. */
const CREATE_WAIT_MS = 5000;
/** How long a dropped watch waits for etcd to confirm its cancel before its client is closed. */
const CANCEL_WAIT_MS = 1000;

export class EtcdLogReader implements LogReader {
  readonly revisionsSkip = true;
  private base: number | undefined;
  private storeId: string | undefined;
  private client: Etcd3 | undefined;
  private stream: EtcdWatcher | undefined;
  /** The revision (ours) the stream has delivered up to: read(after) continues it only from here. */
  private position = -1;
  private buffer: LogEntry[] = [];
  private failure: Error | undefined;
  private wake: (() => void) | undefined;
  private closed = false;

  constructor(private readonly backend: EtcdBackend) {}

  async head(): Promise<{ revision: number; storeId: string }> {
    this.ready();
    const h = await this.backend.head();
    this.learn(h.base, h.storeId);
    return { revision: h.revision, storeId: h.storeId };
  }

  async snapshot(kinds: readonly Kind[]): Promise<RawSnapshot> {
    this.ready();
    const { snap, base } = await this.backend.snapshotWithBase(kinds);
    this.learn(base, snap.storeId);
    return snap;
  }

  async read(after: number, waitMs: number): Promise<LogEntry[]> {
    this.ready();
    if (this.base === undefined) await this.head();
    if (!this.stream || after !== this.position || this.failure) {
      // Where the watcher is now is not where the stream is (first read, a resync, a failure):
      // a new watch from exactly after + 1.
      if (this.failure) throw await this.failed();
      this.drop();
      await this.start(after);
    }
    if (this.buffer.length === 0 && !this.failure) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, waitMs);
        function done(): void {
          clearTimeout(t);
          resolve();
        }
        this.wake = done;
      });
      this.wake = undefined;
    }
    if (this.buffer.length === 0 && this.failure) throw await this.failed();
    const out = this.buffer;
    this.buffer = [];
    if (out.length > 0) this.position = out[out.length - 1]!.revision;
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.drop();
  }

  /**
   * Drops the failed stream and says why it failed. etcd cancels a watch whose start revision
   * was compacted without a reason the client passes on, so a cancel is checked with a read at
   * that revision: "compacted" there means the log was trimmed past us.
   */
  private async failed(): Promise<Error> {
    const e = this.failure!;
    const after = this.position;
    const base = this.base!;
    this.drop();
    if (!/Watcher canceled/.test(e.message)) return e;
    try {
      await this.backend.client.kv.range({ key: Buffer.from(this.backend.keys.id), revision: after + base + 1 });
      return e;
    } catch (probe) {
      return /compacted/.test(String(probe)) ? new LogTrimmedError(after) : e;
    }
  }

  private ready(): void {
    if (this.closed) throw new DatastoreError('watch closed', 'Closed');
  }

  private learn(base: number, storeId: string): void {
    if (this.storeId !== undefined && (storeId !== this.storeId || base !== this.base)) this.drop();
    this.base = base;
    this.storeId = storeId;
  }

  private async start(after: number): Promise<void> {
    const base = this.base!;
    const keys = this.backend.keys;
    const client = await newEtcdClient(this.backend.options);
    if (this.closed) {
      // Closed while the client was being made: nothing may keep it (and the process) alive.
      client.close();
      throw new DatastoreError('watch closed', 'Closed');
    }
    this.client = client;
    this.position = after;
    this.failure = undefined;
    const fail = (e: Error): void => {
      if (client !== this.client) return;
      this.failure ??= e;
      this.wake?.();
    };
    // Handlers go on before the watch connects: an EventEmitter 'error' without one would throw.
    const stream = client
      .watch()
      .prefix(keys.prefix)
      .withPreviousKV()
      .startRevision(String(after + base + 1))
      .watcher();
    this.stream = stream;
    let connected: (() => void) | undefined;
    const kvPrefix = `${keys.prefix}kv/`;
    stream.on('data', (res: IWatchResponse) => {
      if (client !== this.client) return;
      for (const ev of res.events ?? []) {
        const key = ev.kv.key.toString();
        if (key === keys.id) {
          // The id deleted or rewritten: this is not the store we were following.
          if (ev.type === 'Delete' || ev.kv.value.toString() !== this.storeId)
            fail(new DatastoreError('etcd: the store was emptied or replaced under the watch', 'Unavailable'));
          continue;
        }
        if (!key.startsWith(kvPrefix)) continue;
        const rest = key.slice(kvPrefix.length);
        const slash = rest.indexOf('/');
        const del = ev.type === 'Delete';
        const value: IKeyValue | undefined = del ? ev.prev_kv : ev.kv;
        this.buffer.push({
          revision: Number(ev.kv.mod_revision) - base,
          type: del ? 'del' : 'put',
          kind: rest.slice(0, slash) as Kind,
          key: rest.slice(slash + 1),
          json: value?.value?.toString() ?? '',
        });
      }
      this.wake?.();
    });
    stream.on('error', (e: Error) => fail(unavailable(e)));
    stream.on('disconnected', (e: Error) => fail(unavailable(e)));
    stream.on('connected', () => connected?.());
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        fail(new DatastoreError(`etcd: the watch was not created within ${CREATE_WAIT_MS} ms`, 'Unavailable'));
        resolve();
      }, CREATE_WAIT_MS);
      connected = () => {
        clearTimeout(t);
        resolve();
      };
      // A failure before "created" (a compacted start revision, an unreachable cluster) ends the wait too.
      this.wake = connected;
    });
    this.wake = undefined;
  }

  /** Drops the stream and its client; buffered events go with them (the next watch starts after `position`). */
  private drop(): void {
    const c = this.client;
    const stream = this.stream;
    this.client = undefined;
    this.stream = undefined;
    this.buffer = [];
    this.failure = undefined;
    this.position = -1;
    this.wake?.();
    if (!c) return;
    // Cancel the watch first: a client closed under a live watch goes on reconnecting it (and
    // keeps the process alive). The cancel is bounded: a dead member never confirms it.
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((r) => {
      timer = setTimeout(r, CANCEL_WAIT_MS);
    });
    void Promise.race([stream?.cancel().catch(() => undefined), bound]).finally(() => {
      clearTimeout(timer);
      try {
        c.close();
      } catch {
        /* closing a client whose channels already failed */
      }
    });
  }
}
