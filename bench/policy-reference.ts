// The reference side of the policy benchmark as the benchmark's process sees it: a process of its
// own (bench/policy-reference-process.ts) holding its calculation graph and ipset/iptables
// state, sent each change's resources and answering with its timings. Kept apart because a
// process that starts children pays for them in its own later work: every fork copies the
// parent's page tables and marks its memory copy-on-write, and the parent's next writes fault
// and its next reads refill the TLB (podroute's steps measured 2–5× slower in CPU time when
// the reference's ipset and iptables-restore were started from its process). podroute's agent
// starts no process per change (its dataplane is netlink) and Calico's felix starts its own,
// so each side here starts only its own children.
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Resource } from '../lib/resources/index.js';
import type { ReferenceChange } from './policy-iptables.js';

/** One change as resources: put (created or updated), then deleted by kind and datastore key. */
export interface ResourceChange {
  readonly put?: readonly Resource[];
  readonly delete?: readonly (readonly [kind: string, key: string])[];
}

/** The sizes of a PolicyInput, to compare the two sides' calculation graphs by. */
export interface InputShape {
  readonly sets: number;
  readonly namedPortSets: number;
  readonly policies: number;
  readonly endpoints: number;
}

export interface KernelCounts {
  readonly rules: number;
  readonly sets: number;
  readonly elements: number;
}

type Request = ({ readonly type: 'change' } & ResourceChange) | { readonly type: 'counts' };
export type ReferenceRequest = Request & { readonly id: number };
export type ReferenceReply =
  | { readonly type: 'change'; readonly id: number; readonly change: ReferenceChange; readonly input: InputShape }
  | { readonly type: 'counts'; readonly id: number; readonly kernel: KernelCounts; readonly expected: number }
  | { readonly type: 'error'; readonly id: number; readonly message: string };

/** Flags for the benchmark's own process (profiles, GC traces) that the reference's is not to inherit. */
const OWN_FLAGS = /^--(cpu-prof|heap-prof|prof|trace-gc|inspect)/;

export class ReferenceProcess {
  private readonly child: ChildProcess;
  private next = 0;
  private readonly waiting = new Map<number, { resolve: (r: ReferenceReply) => void; reject: (e: Error) => void }>();
  private exited?: Error;

  constructor(
    readonly netns: string,
    nodeName: string,
  ) {
    this.child = fork(fileURLToPath(new URL('./policy-reference-process.ts', import.meta.url)), [netns, nodeName], {
      // The loader that runs this file (tsx) runs the reference's too.
      execArgv: process.execArgv.filter((a) => !OWN_FLAGS.test(a)),
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (m: ReferenceReply) => {
      const w = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.type === 'error') w?.reject(new Error(`the reference's process: ${m.message}`));
      else w?.resolve(m);
    });
    this.child.on('exit', (code, signal) => {
      this.exited = new Error(`the reference's process exited (${signal ?? `code ${code}`})`);
      for (const w of this.waiting.values()) w.reject(this.exited);
      this.waiting.clear();
    });
  }

  private ask(m: Request): Promise<ReferenceReply> {
    if (this.exited) return Promise.reject(this.exited);
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.child.send({ ...m, id });
    });
  }

  /** The change into the reference's graph, then its input applied; its timings exclude the graph and the channel. */
  async apply(change: ResourceChange): Promise<{ change: ReferenceChange; input: InputShape }> {
    const r = await this.ask({ type: 'change', ...change });
    if (r.type !== 'change') throw new Error(`the reference's process answered a change with ${r.type}`);
    return r;
  }

  /** What iptables-save and ipset save list now, and the set elements the reference expects there. */
  async kernelCounts(): Promise<{ kernel: KernelCounts; expected: number }> {
    const r = await this.ask({ type: 'counts' });
    if (r.type !== 'counts') throw new Error(`the reference's process answered counts with ${r.type}`);
    return r;
  }

  close(): void {
    if (this.child.connected) this.child.disconnect();
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill();
  }
}
