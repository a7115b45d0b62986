// The BFD thread: a `Bfd` endpoint (sockets, timers, machines) on an event loop of its own, so
// that a main thread busy for longer than a detection time (a compile, a GC, a burst of
// UPDATEs) does not read as the path being down. It does what the main thread asks and tells
// it, in order, every change of a session that a client can see (see messages.ts), the changes
// of one turn of its loop in one message.
import { parentPort, workerData } from 'node:worker_threads';
import { Bfd } from './endpoint.js';
import type { FromThread, ThreadData, ToThread } from './messages.js';
import type { BfdSession } from './session.js';
import type { BfdState } from './types.js';

/** Discards reported to the main thread a second at most; the count has them all. */
const DISCARDS_REPORTED = 100;

const port = parentPort!;
const data = workerData as ThreadData;
const bfd = new Bfd(data.options);
const sessions = new Map<number, BfdSession>();
/** The machine as the main thread last heard of it. */
const told = new Map<number, BfdState>();

/**
 * What the main thread has still to hear, sent once a turn of this loop: a storm of changes
 * (a thousand sessions going down at once) is a few messages, not one per change, so the main
 * thread's share of the CPU is not spent on message handling when the sessions need it most.
 */
let pending: FromThread[] = [];

function post(m: FromThread): void {
  if (pending.length === 0) setImmediate(flush);
  pending.push(m);
}

function flush(): void {
  if (pending.length === 0) return;
  port.postMessage(pending);
  pending = [];
}

/** Whether a client could see the difference (not the jitter's seed nor the timers' last values). */
function visible(a: BfdState, b: BfdState): boolean {
  return (
    a.sessionState !== b.sessionState ||
    a.remoteSessionState !== b.remoteSessionState ||
    a.remoteDiscr !== b.remoteDiscr ||
    a.localDiag !== b.localDiag ||
    a.config !== b.config ||
    a.desiredMinTxInterval !== b.desiredMinTxInterval ||
    a.requiredMinRxInterval !== b.requiredMinRxInterval ||
    a.remoteMinRxInterval !== b.remoteMinRxInterval ||
    a.remoteDesiredMinTxInterval !== b.remoteDesiredMinTxInterval ||
    a.remoteDetectMult !== b.remoteDetectMult ||
    a.remoteDemandMode !== b.remoteDemandMode ||
    a.txIntervalInEffect !== b.txIntervalInEffect ||
    a.rxIntervalInEffect !== b.rxIntervalInEffect ||
    a.polling !== b.polling
  );
}

function tell(id: number, s: BfdSession, change?: [BfdSession['state'], BfdSession['state'], number]): void {
  told.set(id, s.variables);
  post({ t: 'session', id, variables: s.variables, since: s.since, upCount: s.upCount, ...(change ? { change } : {}) });
}

let reported = 0;
let reportedSince = 0;
bfd.on('discarded', (from, why) => {
  data.discards[0] = bfd.discards;
  const now = Date.now();
  if (now - reportedSince >= 1000) {
    reportedSince = now;
    reported = 0;
  }
  if (reported++ < DISCARDS_REPORTED) post({ t: 'discarded', from, why });
});
bfd.on('error', (e) => post({ t: 'error', message: e.message }));

function add(m: Extract<ToThread, { op: 'add' }>): void {
  let s: BfdSession;
  try {
    s = bfd.addSession(m.options, { discriminator: m.id, seed: m.seed, counters: m.counters });
  } catch (e) {
    post({ t: 'failed', id: m.id, message: (e as Error).message });
    return;
  }
  sessions.set(m.id, s);
  told.set(m.id, s.variables);
  s.on('state', (to, from, diag) => tell(m.id, s, [to, from, diag]));
  s.onStep = () => {
    if (visible(told.get(m.id)!, s.variables)) tell(m.id, s);
  };
}

port.on('message', (m: ToThread) => {
  if (m.op === 'add') return add(m);
  if (m.op === 'sync') return post({ t: 'synced', n: m.n });
  if (m.op === 'close') {
    void bfd.close().then(() => {
      post({ t: 'closed' });
      flush();
      port.close();
    });
    return;
  }
  const s = sessions.get(m.id);
  if (!s) return;
  if (m.op === 'timers') s.setTimers(m.timers);
  else if (m.op === 'adminDown') s.adminDown();
  else if (m.op === 'adminUp') s.adminUp();
  else if (m.op === 'dispose') s.dispose();
  else {
    sessions.delete(m.id);
    told.delete(m.id);
    bfd.release(s);
  }
});
