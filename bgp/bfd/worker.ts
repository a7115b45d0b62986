// The BFD endpoint with its sessions on a thread of their own (thread.ts): sockets, timers and
// machines keep time however long this thread is busy, where on the main event loop a stall
// over a detection time (300 ms at 100 ms × 3) reads as the peer being down. This side keeps
// `Bfd`'s API: sessions are mirrored here (mirror.ts), their state events arrive in order.
// A thread that stops is reported: its sessions read Down (their clients act as on any Down),
// an 'error' says why, and a new thread takes the sessions up again.
import { randomInt } from 'node:crypto';
import type { Worker } from 'node:worker_threads';
import { EventEmitter } from 'eventemitter3';
import { Bfd, checkSessionOptions, type BfdEndpoint, type BfdEvents, type BfdOptions, type BfdSessionOptions } from './endpoint.js';
import type { FromThread, ToThread } from './messages.js';
import { BfdSessionMirror } from './mirror.js';
import { requireBfdSocket } from './native.js';
import type { BfdSessionStatus } from './session.js';
import { spawnBfdThread } from './spawn.js';

/** A thread that ran this long before it stopped is started again at once; sooner, after a growing delay. */
const STABLE_MS = 10_000;
const FIRST_DELAY_MS = 1000;
const MAX_DELAY_MS = 60_000;
/** How long close() waits for the thread to send its AdminDowns before ending it. */
const CLOSE_WAIT_MS = 5000;

export interface BfdEndpointOptions extends BfdOptions {
  /** Where the sessions run: their own thread (default), or this thread's event loop. */
  thread?: 'worker' | 'main';
}

/** The endpoint the options ask for: a BfdWorker unless `thread: 'main'`. */
export function createBfdEndpoint(options: BfdEndpointOptions = {}): BfdEndpoint {
  const { thread, ...rest } = options;
  if (thread !== undefined && thread !== 'worker' && thread !== 'main')
    throw new TypeError(`bfd thread: "${String(thread)}" is not worker or main`);
  return thread === 'main' ? new Bfd(rest) : new BfdWorker(rest);
}

/** Whether `v` is an endpoint rather than options for one. */
export function isBfdEndpoint(v: unknown): v is BfdEndpoint {
  return typeof v === 'object' && v !== null && typeof (v as BfdEndpoint).add === 'function';
}

export class BfdWorker extends EventEmitter<BfdEvents> implements BfdEndpoint {
  private thread: Worker | undefined;
  private startedAt = 0;
  private delay = FIRST_DELAY_MS;
  private restart: NodeJS.Timeout | undefined;
  private readonly byId = new Map<number, BfdSessionMirror>();
  private readonly byKey = new Map<string, BfdSessionMirror>();
  private readonly discardCount = new Float64Array(new SharedArrayBuffer(8));
  private closed = false;
  private closing: Promise<void> | undefined;
  /** What the thread threw before it stopped, if it did. */
  private thrown: Error | undefined;
  private readonly post = (m: ToThread) => this.thread?.postMessage(m);
  private syncs = 0;
  private readonly waiting = new Map<number, () => void>();

  constructor(private readonly options: BfdOptions = {}) {
    super();
    // Refused here, as by Bfd, rather than in the thread: without the addon BFD never runs.
    requireBfdSocket('BFD');
  }

  /** The thread the sessions run on, while one runs (its threadId, say). */
  get worker(): Worker | undefined {
    return this.thread;
  }

  get discards(): number {
    return this.discardCount[0]!;
  }

  /** As Bfd.add: checked here (errors are thrown here, naming the field); the session runs in the thread. */
  add(options: BfdSessionOptions): BfdSessionMirror {
    if (this.closed) throw new Error('BFD endpoint closed');
    const { key, timers } = checkSessionOptions(options);
    const existing = this.byKey.get(key);
    if (existing) {
      existing.users++;
      existing.setTimers(timers);
      return existing;
    }
    let discr = randomInt(1, 0xffffffff);
    while (this.byId.has(discr)) discr = randomInt(1, 0xffffffff);
    const s = new BfdSessionMirror(options.peer, options.localAddress, timers, discr, randomInt(1, 0xffffffff), this.post);
    s.on('state', (to, from, diag) => this.emit('state', s, to, from, diag));
    this.byId.set(discr, s);
    this.byKey.set(key, s);
    if (this.thread) this.post(s.addMessage());
    else if (this.restart === undefined) this.start();
    this.holdProcess();
    return s;
  }

  /** As Bfd.release: the last client's release tells the remote AdminDown. */
  release(s: BfdSessionMirror): void {
    if (--s.users > 0) return;
    this.post({ op: 'release', id: s.localDiscriminator });
    s.disposed = true;
    s.removeAllListeners();
    this.byId.delete(s.localDiscriminator);
    for (const [k, v] of this.byKey) if (v === s) this.byKey.delete(k);
    this.holdProcess();
  }

  /** Resolves once the thread runs every session added so far (or has stopped: see 'error'). */
  ready(): Promise<void> {
    if (!this.thread) return Promise.resolve();
    const n = ++this.syncs;
    return new Promise((resolve) => {
      this.waiting.set(n, resolve);
      this.post({ op: 'sync', n });
    });
  }

  get sessions(): BfdSessionMirror[] {
    return [...this.byId.values()];
  }

  status(): BfdSessionStatus[] {
    return this.sessions.map((s) => s.status());
  }

  /** Ends every session (AdminDown to each remote), closes the sockets and ends the thread. */
  close(): Promise<void> {
    this.closing ??= this.shut();
    return this.closing;
  }

  private async shut(): Promise<void> {
    this.closed = true;
    clearTimeout(this.restart);
    this.restart = undefined;
    for (const s of this.byId.values()) {
      s.disposed = true;
      s.removeAllListeners();
    }
    this.byId.clear();
    this.byKey.clear();
    const t = this.thread;
    if (!t) return;
    t.ref();
    const exited = new Promise<void>((resolve) => t.once('exit', () => resolve()));
    this.post({ op: 'close' });
    const stuck = setTimeout(() => void t.terminate(), CLOSE_WAIT_MS);
    stuck.unref();
    await exited;
    clearTimeout(stuck);
  }

  private start(): void {
    this.restart = undefined;
    this.thrown = undefined;
    const t = spawnBfdThread(this.options, this.discardCount);
    this.thread = t;
    this.startedAt = performance.now();
    t.on('message', (batch: FromThread[]) => {
      for (const m of batch) this.onMessage(m);
    });
    t.on('error', (e) => {
      this.thrown = e;
    });
    t.on('exit', (code) => this.onExit(t, code));
    for (const s of this.byId.values()) {
      if (s.disposed) continue;
      this.post(s.addMessage());
      if (s.admin) this.post({ op: 'adminDown', id: s.localDiscriminator });
    }
    this.holdProcess();
  }

  /** The thread keeps the process alive while it has sessions, as Bfd's sockets do. */
  private holdProcess(): void {
    if (this.byId.size > 0 || this.closing) this.thread?.ref();
    else this.thread?.unref();
  }

  private onMessage(m: FromThread): void {
    switch (m.t) {
      case 'session':
      case 'failed':
        this.byId.get(m.id)?.apply(m);
        if (m.t === 'failed') this.emit('error', new Error(`bfd peer ${this.byId.get(m.id)?.peer ?? m.id}: ${m.message}`));
        return;
      case 'discarded':
        this.emit('discarded', m.from, m.why);
        return;
      case 'error':
        this.emit('error', new Error(m.message));
        return;
      case 'synced':
        this.waiting.get(m.n)?.();
        this.waiting.delete(m.n);
        return;
      case 'closed':
        return;
    }
  }

  private onExit(t: Worker, code: number): void {
    if (t !== this.thread) return;
    this.thread = undefined;
    for (const resolve of this.waiting.values()) resolve();
    this.waiting.clear();
    if (this.closed) return;
    const ran = performance.now() - this.startedAt;
    const wait = ran >= STABLE_MS ? 0 : this.delay;
    this.delay = ran >= STABLE_MS ? FIRST_DELAY_MS : Math.min(this.delay * 2, MAX_DELAY_MS);
    const why = this.thrown ? `it threw: ${this.thrown.message}` : `exit code ${code}`;
    this.restart = setTimeout(() => this.start(), wait);
    if (this.byId.size === 0) this.restart.unref();
    this.emit(
      'error',
      new Error(
        `bfd: the BFD thread stopped (${why}); its sessions (${this.byId.size}) read Down until a new thread runs them, ${wait === 0 ? 'starting now' : `in ${wait / 1000} s`}`,
      ),
    );
    for (const s of [...this.byId.values()]) s.threadStopped();
  }
}
