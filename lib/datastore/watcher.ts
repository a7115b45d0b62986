// One watch loop for every backend. Exactness comes from the revision: every write gets the
// next integer, and the change log holds one entry per revision, so a reader that remembers
// the last revision it saw can ask for "everything after N" and knows it missed something
// exactly when the first entry it gets is not N+1 (the log was trimmed past it) or the store
// is not the one it was reading (a different store id, or a revision that went backwards
// because Redis came back empty). In those cases, and only then, it lists the store and
// delivers the difference against what it has delivered so far. etcd's revisions skip numbers
// (one per transaction, shared with other stores' keys): its reader reports a trim by
// LogTrimmedError (its watch start revision was compacted) instead.
import { EventEmitter } from 'eventemitter3';
import { KINDS, resourceKey, type Kind } from '../resources/index.js';
import { decodeResource } from './codec.js';
import { LogTrimmedError, type LogEntry, type LogReader, type RawSnapshot } from './backend.js';
import type { WatchEvent, WatchEvents, WatchOptions, Watcher } from './types.js';

const READ_WAIT_MS = 1000;
const BACKOFF_MIN_MS = 50;
const BACKOFF_MAX_MS = 2000;

export class LogWatcher extends EventEmitter<WatchEvents> implements Watcher {
  private readonly kinds: ReadonlySet<Kind>;
  /** kind \0 key -> revision of the object as last delivered. */
  private readonly view = new Map<string, number>();
  private after = 0;
  private storeId: string | undefined;
  private closed = false;
  private readonly done: Promise<void>;

  constructor(
    private readonly reader: LogReader,
    options: WatchOptions = {},
  ) {
    super();
    this.kinds = new Set(options.kinds ?? KINDS);
    for (const r of options.known ?? []) {
      if (this.kinds.has(r.kind)) this.view.set(`${r.kind}\0${resourceKey(r)}`, Number(r.metadata.resourceVersion ?? 0));
    }
    // Start on the next turn so the caller can attach listeners first.
    this.done = new Promise<void>((r) => setImmediate(r)).then(() => this.run(options.fromRevision));
  }

  get revision(): number {
    return this.after;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.reader.close();
    await this.done;
  }

  private async run(fromRevision: number | undefined): Promise<void> {
    let needHead = true;
    let initial = fromRevision === undefined;
    if (fromRevision !== undefined) this.after = fromRevision;
    let backoff = BACKOFF_MIN_MS;
    while (!this.closed) {
      try {
        if (initial) {
          await this.resync(await this.reader.snapshot([...this.kinds]), false);
          initial = false;
          needHead = false;
        } else if (needHead) {
          const head = await this.reader.head();
          const replaced = this.storeId !== undefined && head.storeId !== this.storeId;
          if (replaced || head.revision < this.after) {
            // Not the store we were following (it came back empty or was replaced): list it all.
            await this.resync(await this.reader.snapshot([...this.kinds]), true);
          } else {
            this.storeId = head.storeId;
          }
          needHead = false;
        }
        this.emit('status', 'connected');
        backoff = BACKOFF_MIN_MS;
        for (;;) {
          if (this.closed) return;
          let entries: LogEntry[];
          try {
            entries = await this.reader.read(this.after, READ_WAIT_MS);
          } catch (e) {
            if (!(e instanceof LogTrimmedError)) throw e;
            await this.resync(await this.reader.snapshot([...this.kinds]), false);
            continue;
          }
          if (this.closed) return;
          if (!this.reader.revisionsSkip && entries.length > 0 && entries[0]!.revision !== this.after + 1) {
            // The log no longer holds revision after+1: it was trimmed while we were away.
            await this.resync(await this.reader.snapshot([...this.kinds]), false);
            continue;
          }
          for (const e of entries) this.deliver(e);
        }
      } catch (err) {
        if (this.closed) return;
        this.emit('status', 'disconnected');
        this.emit('error', err instanceof Error ? err : new Error(String(err)));
        needHead = true;
        await sleep(backoff);
        backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
      }
    }
  }

  private deliver(e: LogEntry): void {
    this.after = e.revision;
    if (!this.kinds.has(e.kind)) return;
    const id = `${e.kind}\0${e.key}`;
    if (e.type === 'put') {
      this.view.set(id, e.revision);
      this.emit('event', {
        type: 'put',
        kind: e.kind,
        key: e.key,
        revision: e.revision,
        resource: decodeResource(e.kind, e.json, e.revision),
        synthetic: false,
      });
    } else {
      this.view.delete(id);
      const previous = e.json ? decodeResource(e.kind, e.json, e.revision) : undefined;
      const ev: WatchEvent = { type: 'delete', kind: e.kind, key: e.key, revision: e.revision, synthetic: false };
      if (previous) ev.previous = previous;
      this.emit('event', ev);
    }
  }

  /** Delivers the difference between what we delivered and the snapshot, then `synced`. */
  private async resync(snap: RawSnapshot, replaced: boolean): Promise<void> {
    if (this.closed) return;
    if (replaced) this.emit('status', 'replaced');
    this.emit('status', 'resyncing');
    const seen = new Set<string>();
    for (const it of snap.items) {
      const id = `${it.kind}\0${it.key}`;
      seen.add(id);
      // After a store replacement revisions restart, so an equal revision proves nothing.
      if (!replaced && this.view.get(id) === it.revision) continue;
      this.view.set(id, it.revision);
      this.emit('event', {
        type: 'put',
        kind: it.kind,
        key: it.key,
        revision: snap.revision,
        resource: decodeResource(it.kind, it.json, it.revision),
        synthetic: true,
      });
    }
    for (const id of [...this.view.keys()]) {
      if (seen.has(id)) continue;
      this.view.delete(id);
      const sep = id.indexOf('\0');
      this.emit('event', {
        type: 'delete',
        kind: id.slice(0, sep) as Kind,
        key: id.slice(sep + 1),
        revision: snap.revision,
        synthetic: true,
      });
    }
    this.after = snap.revision;
    this.storeId = snap.storeId;
    this.emit('event', { type: 'synced', revision: snap.revision });
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
