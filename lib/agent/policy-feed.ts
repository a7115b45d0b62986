// The packet half of felix, fed: every policy, namespace, workload endpoint and pool the watch
// delivers goes into the calculation graph; its PolicyInput for this node is compiled to the
// nftables table and handed to the programmer, which applies only the difference. Events
// arriving together are folded into one compile and one nft transaction.
import {
  compileNftables,
  type CompileOptions,
  dumpTable,
  type PolicyApplyReport,
  type PolicyInput,
  type PolicyProgrammer,
  type TableDump,
} from '../../felix/index.js';
import type { WatchEvent } from '../datastore/index.js';
import type { Kind, Resource } from '../resources/index.js';
import { CALCULATION_KINDS, PolicyCalculator, PolicyConversionError } from '../policy/index.js';

const FOLLOWED = new Set<Kind>(CALCULATION_KINDS);

export interface PolicyFeedOptions {
  nodeName: string;
  programmer: PolicyProgrammer;
  compile?: CompileOptions;
  /** Told every input compiled (the flow log reads its rules' prefixes from it). */
  onInput?: (input: PolicyInput) => void;
  log: (event: string, fields: Record<string, unknown>) => void;
}

export class PolicyFeed {
  private readonly calculator: PolicyCalculator;
  private scheduled = false;
  private started = false;
  private lastInput: unknown;
  /** Resources the calculation graph refused, by kind/key, with why: a bad policy stays out and is reported. */
  readonly refused = new Map<string, string>();

  constructor(private readonly options: PolicyFeedOptions) {
    this.calculator = new PolicyCalculator(options.nodeName);
    options.programmer.on('report', (r) => this.onReport(r));
  }

  /** The kinds the feed needs from the watch. */
  static readonly kinds: readonly Kind[] = CALCULATION_KINDS;

  /** Takes one watch event; true when it concerned the feed. */
  apply(e: WatchEvent): boolean {
    if (e.type === 'synced' || !FOLLOWED.has(e.kind)) return false;
    const id = `${e.kind}/${e.key}`;
    try {
      if (e.type === 'put') this.calculator.put(e.resource as Resource);
      else this.calculator.delete(e.kind, e.key);
      if (this.refused.delete(id)) this.options.log('policy-accepted', { resource: id });
    } catch (err) {
      if (!(err instanceof PolicyConversionError)) throw err;
      // The datastore validated it, so this is a resource the graph cannot express; the rest
      // of the cluster's policy still applies, and the operator is told which one and why.
      this.refused.set(id, err.message);
      this.options.log('policy-refused', { resource: id, error: err.message });
      return false;
    }
    this.schedule();
    return true;
  }

  /** Programs the kernel from now on (after the first full sync of the watch). */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.options.programmer.start().catch((e: Error) => this.options.log('policy-error', { error: e.message }));
    this.push();
  }

  stop(): void {
    this.options.programmer.stop();
  }

  /** Packets and bytes per rule id (`<policy id>/<direction>/<rule>`), read from the kernel. */
  counters(): ReturnType<PolicyProgrammer['counters']> {
    return this.options.programmer.counters();
  }

  /** felix's table in nft syntax; with `kernel`, the kernel's, read back, marked where it differs from felix's. */
  async dump(kernel: boolean): Promise<TableDump> {
    const p = this.options.programmer;
    return dumpTable(p.desired, kernel ? ((await p.dataplane.read()) ?? null) : undefined);
  }

  /** Resolves once every change so far is in the kernel (or has failed and been reported). */
  settled(): Promise<void> {
    return this.options.programmer.settled();
  }

  private schedule(): void {
    if (this.scheduled || !this.started) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.push();
    });
  }

  private push(): void {
    const input = this.calculator.input();
    if (input === this.lastInput) return; // the calculator hands back the same object while nothing changed
    this.lastInput = input;
    this.options.onInput?.(input);
    this.options.programmer
      .update(compileNftables(input, this.options.compile))
      .catch((e: Error) => this.options.log('policy-error', { error: e.message }));
  }

  private onReport(r: PolicyApplyReport): void {
    if (!r.ok) this.options.log('policy-apply-failed', { kind: r.kind, error: r.error });
  }
}
