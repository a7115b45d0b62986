// A benchmark's reference side in a process of its own, asked over an IPC channel. A process that
// starts children pays for them in its own later work: every fork copies the parent's page tables
// and marks its memory copy-on-write, and the parent's next writes fault and its next reads refill
// the TLB (podroute's policy steps measured 2–5× slower in CPU time while the reference's ipset and
// iptables-restore were started from its process). So each side starts only its own children, as
// podroute's agent and Calico's felix or kube-proxy each do on a node.
import { type ChildProcess, fork } from 'node:child_process';

/** Flags for the benchmark's own process (profiles, GC traces) that the reference's is not to inherit. */
const OWN_FLAGS = /^--(cpu-prof|heap-prof|prof|trace-gc|inspect)/;

/** What the child answers: its reply to request `id`, or the error that request met. */
export type ChannelReply<R> = (R & { readonly id: number }) | { readonly type: 'error'; readonly id: number; readonly message: string };

/** The benchmark's end: requests `Q` sent to the script at `script`, replies `R` matched to them by id. */
export class ReferenceChannel<Q extends object, R extends object> {
  private readonly child: ChildProcess;
  private next = 0;
  private readonly waiting = new Map<number, { resolve: (r: R) => void; reject: (e: Error) => void }>();
  private exited?: Error;

  constructor(script: URL, argv: readonly string[]) {
    this.child = fork(script, [...argv], {
      // The loader that runs the benchmark (tsx) runs the reference's script too.
      execArgv: process.execArgv.filter((a) => !OWN_FLAGS.test(a)),
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (m: ChannelReply<R>) => {
      const w = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if ('type' in m && m.type === 'error' && 'message' in m) w?.reject(new Error(`the reference's process: ${m.message}`));
      else w?.resolve(m as R);
    });
    this.child.on('exit', (code, signal) => {
      this.exited = new Error(`the reference's process exited (${signal ?? `code ${code}`})`);
      for (const w of this.waiting.values()) w.reject(this.exited);
      this.waiting.clear();
    });
  }

  ask(m: Q): Promise<R> {
    if (this.exited) return Promise.reject(this.exited);
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.child.send({ ...m, id });
    });
  }

  close(): void {
    if (this.child.connected) this.child.disconnect();
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill();
  }
}

/**
 * The reference's end: each request handed to `answer`, its reply (or its error) sent back with
 * the request's id; the channel closing (the benchmark done or gone) ends the process.
 */
export function serveReference<Q extends object, R extends object>(script: string, answer: (m: Q) => Promise<R>): void {
  if (!process.send) throw new Error(`${script} is started by its benchmark over an IPC channel`);
  const send = (m: ChannelReply<R>): void => {
    process.send!(m);
  };
  process.on('message', (m: Q & { readonly id: number }) => {
    answer(m).then(
      (r) => send({ ...r, id: m.id }),
      (e: unknown) => send({ type: 'error', id: m.id, message: e instanceof Error ? (e.stack ?? e.message) : String(e) }),
    );
  });
  process.on('disconnect', () => process.exit(0));
}
