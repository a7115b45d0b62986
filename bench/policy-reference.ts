// The reference side of the policy benchmark as the benchmark's process sees it: a process of its
// own (bench/policy-reference-process.ts) holding its calculation graph and ipset/iptables
// state, sent each change's resources and answering with its timings. Kept apart so that its
// ipset and iptables-restore are not forked from the process that holds podroute
// (bench/reference-channel.ts says why that matters).
import type { Resource } from '../lib/resources/index.js';
import type { ReferenceChange } from './policy-iptables.js';
import { ReferenceChannel } from './reference-channel.js';

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

export type ReferenceRequest = ({ readonly type: 'change' } & ResourceChange) | { readonly type: 'counts' };
export type ReferenceReply =
  | { readonly type: 'change'; readonly change: ReferenceChange; readonly input: InputShape }
  | { readonly type: 'counts'; readonly kernel: KernelCounts; readonly expected: number };

export class ReferenceProcess {
  private readonly channel: ReferenceChannel<ReferenceRequest, ReferenceReply>;

  constructor(
    readonly netns: string,
    nodeName: string,
  ) {
    this.channel = new ReferenceChannel(new URL('./policy-reference-process.ts', import.meta.url), [netns, nodeName]);
  }

  /** The change into the reference's graph, then its input applied; its timings exclude the graph and the channel. */
  async apply(change: ResourceChange): Promise<{ change: ReferenceChange; input: InputShape }> {
    const r = await this.channel.ask({ type: 'change', ...change });
    if (r.type !== 'change') throw new Error(`the reference's process answered a change with ${r.type}`);
    return r;
  }

  /** What iptables-save and ipset save list now, and the set elements the reference expects there. */
  async kernelCounts(): Promise<{ kernel: KernelCounts; expected: number }> {
    const r = await this.channel.ask({ type: 'counts' });
    if (r.type !== 'counts') throw new Error(`the reference's process answered counts with ${r.type}`);
    return r;
  }

  close(): void {
    this.channel.close();
  }
}
