// `podroute policy explain`: for one pod, per direction, the tiers and policies that select it
// and what each of their rules allows or denies (in words, and resolved to the pods it matches
// today); and the verdict on one connection, computed by evaluating the very PolicyInput felix
// compiles (cluster-wide, so every pod has its endpoint). Cyclonus's question, answered from
// inside the cluster's model.
import { type PolicyInput, type Protocol, type RuleAction, policyTier } from '../../felix/policy/input.js';
import { formatAddress, parseAddress, parseInterfaceAddress } from '../../ip/index.js';
import { LABEL_NAMESPACE, LABEL_ORCHESTRATOR, type Resource } from '../resources/index.js';
import { PolicyCalculator } from './calculator.js';
import { ruleText, sideWorkloads } from './describe.js';
import { type Direction, type DirectionVerdict, evaluateTiers, type Packet, SetIndex } from './evaluate.js';
import type { ParsedPolicy, PolicyKind, TierDefaultAction, TierName } from './model.js';
import { asIfTiers } from './staged.js';
import type { Workload } from './workload.js';

export interface PodRef {
  readonly key: string;
  readonly namespace: string;
  readonly pod: string;
  readonly node: string;
  readonly addresses: readonly string[];
}

export interface RuleExplanation {
  /** Where in the manifest the rule comes from, e.g. `spec.ingress[0].from[1]`. */
  readonly origin: string;
  readonly action: RuleAction;
  readonly text: string;
  /** The pods at the other end today (source for ingress, destination for egress); absent: any address. */
  readonly peers?: readonly PodRef[];
  /** The felix rules (indexes in the policy's rule list for this direction) it became. */
  readonly felixRules: readonly number[];
}

export interface PolicyExplanation {
  readonly id: string;
  readonly kind: PolicyKind;
  readonly name: string;
  readonly namespace?: string;
  readonly order?: number;
  readonly rules: readonly RuleExplanation[];
  /** A staged policy: it counts what its rules match and decides nothing; `replaces` is the enforced policy id it previews. */
  readonly staged?: { readonly replaces: string };
  /** An enforced policy some staged policy sets or deletes: "as if" leaves it out. */
  readonly replacedByStaged?: true;
}

/** One of a pod's tiers in one direction: the policies of it that select the pod, and what ends it. */
export interface TierExplanation {
  readonly tier: TierName;
  readonly order?: number;
  /** What the tier does when none of its policies decides: Deny drops, Pass goes on to the next tier. */
  readonly defaultAction: TierDefaultAction;
  readonly policies: readonly PolicyExplanation[];
}

export interface DirectionExplanation {
  /** Some policy selects the pod in this direction: what no rule allows is dropped. */
  readonly isolated: boolean;
  readonly tiers: readonly TierExplanation[];
}

export interface PodExplanation {
  readonly pod: PodRef & { readonly labels: Readonly<Record<string, string>> };
  readonly ingress: DirectionExplanation;
  readonly egress: DirectionExplanation;
}

export interface StepVerdict extends DirectionVerdict {
  readonly direction: Direction;
  /** The pod whose policy this step is. */
  readonly pod: string;
  /** Where the deciding rule comes from, when a rule decided. */
  readonly origin?: string;
}

export interface ConnectionVerdict {
  readonly allowed: boolean;
  readonly packet: Packet;
  /** Source and destination are one pod: its traffic to itself never leaves it, no policy applies. */
  readonly samePod?: true;
  /** The source pod's egress; absent when the source is no pod. */
  readonly egress?: StepVerdict;
  /** The destination pod's ingress; absent when the destination is no pod. */
  readonly ingress?: StepVerdict;
  /** What would happen were the staged policies enforced; absent when nothing is staged. */
  readonly staged?: StagedVerdict;
}

/** A connection's verdict as if every staged policy were enforced (Set: in place of its enforced one; Delete: that one gone). */
export interface StagedVerdict {
  readonly allowed: boolean;
  readonly egress?: StepVerdict;
  readonly ingress?: StepVerdict;
}

const podRef = (w: Workload): PodRef => ({ key: w.key, namespace: w.namespace, pod: w.pod, node: w.node, addresses: w.addresses });

/** The model `explain` reads: every node's endpoints, so any pod can be asked about. */
export class PolicyExplainer {
  readonly calculator = new PolicyCalculator();
  private index?: { input: PolicyInput; sets: SetIndex };

  constructor(resources: Iterable<Resource>) {
    for (const r of resources) this.calculator.put(r);
  }

  /** A pod by `namespace/pod` (the pod's name, or its WorkloadEndpoint's), or by one of its addresses. */
  findPod(ref: string): Workload | undefined {
    const all = [...this.calculator.workloads().values()];
    const slash = ref.indexOf('/');
    if (slash >= 0) {
      const ns = ref.slice(0, slash);
      const name = ref.slice(slash + 1);
      return all.find((w) => w.namespace === ns && w.pod === name) ?? all.find((w) => w.key === ref);
    }
    let text: string;
    try {
      text = formatOne(ref);
    } catch {
      return undefined;
    }
    return all.find((w) => w.addresses.includes(text));
  }

  explainPod(namespace: string, pod: string): PodExplanation {
    const w = this.findPod(`${namespace}/${pod}`);
    if (!w) throw new Error(`no pod ${namespace}/${pod}: no WorkloadEndpoint in namespace ${namespace} is for pod ${pod}`);
    const ep = this.calculator.endpoint(w.key)!;
    const direction = (d: Direction): DirectionExplanation => ({
      // A tier of staged policies only isolates nothing: they decide nothing.
      isolated: ep[d].some((t) => policyTier(t).policies.some((id) => !this.calculator.policy(id)?.parsed.staged)),
      tiers: ep[d].map((given) => {
        const t = policyTier(given);
        const tier = this.calculator.tier(t.name);
        return {
          tier: t.name,
          ...(tier.order !== undefined ? { order: tier.order } : {}),
          defaultAction: t.defaultAction ?? 'Deny',
          policies: t.policies.map((id) => this.explainPolicy(id, d)),
        };
      }),
    });
    return {
      pod: { ...podRef(w), labels: ownLabels(w) },
      ingress: direction('ingress'),
      egress: direction('egress'),
    };
  }

  /**
   * Whether a connection is allowed: the source pod's egress, then the destination pod's
   * ingress. `src` and `dst` are `namespace/pod` or addresses; ICMP is an echo request.
   */
  verdict(src: string, dst: string, protocol: Protocol, port?: number, srcPort?: number): ConnectionVerdict {
    const from = this.findPod(src);
    const to = this.findPod(dst);
    if (!from && src.includes('/')) throw new Error(`no pod ${src}`);
    if (!to && dst.includes('/')) throw new Error(`no pod ${dst}`);
    const [srcAddress, dstAddress] = addressPair(from?.addresses ?? [formatOne(src)], to?.addresses ?? [formatOne(dst)], src, dst);
    const icmpish = protocol === 'icmp' || protocol === 'icmpv6' || protocol === 1 || protocol === 58;
    const packet: Packet = {
      src: srcAddress,
      dst: dstAddress,
      protocol,
      ...(port !== undefined && !icmpish ? { dstPort: port } : {}),
      ...(srcPort !== undefined && !icmpish ? { srcPort } : {}),
      ...(icmpish ? { icmp: { type: parseAddress(srcAddress).family === 4 ? 8 : 128, code: 0 } } : {}),
    };
    if (from && to && from.key === to.key) return { allowed: true, packet, samePod: true };
    const egress = from ? this.step(from, 'egress', packet) : undefined;
    const ingress = to ? this.step(to, 'ingress', packet) : undefined;
    return {
      allowed: (egress?.allowed ?? true) && (ingress?.allowed ?? true),
      packet,
      ...(egress ? { egress } : {}),
      ...(ingress ? { ingress } : {}),
      ...(this.calculator.hasStaged ? { staged: this.stagedVerdict(from, to, packet) } : {}),
    };
  }

  private stagedVerdict(from: Workload | undefined, to: Workload | undefined, packet: Packet): StagedVerdict {
    const replaced = this.calculator.stagedReplaced();
    const egress = from ? this.step(from, 'egress', packet, replaced) : undefined;
    const ingress = to ? this.step(to, 'ingress', packet, replaced) : undefined;
    return {
      allowed: (egress?.allowed ?? true) && (ingress?.allowed ?? true),
      ...(egress ? { egress } : {}),
      ...(ingress ? { ingress } : {}),
    };
  }

  /** One endpoint's verdict in one direction; with `asIf`, as if the staged policies were enforced (`asIf` the enforced ones they replace). */
  private step(w: Workload, direction: Direction, packet: Packet, asIf?: ReadonlySet<string>): StepVerdict {
    const { input, sets } = this.model();
    const policies = new Map(input.policies.map((p) => [p.id, p]));
    const given = this.calculator.endpoint(w.key)![direction];
    const tiers = asIf ? asIfTiers(given, asIf) : given;
    const v = evaluateTiers(tiers, direction, policies, packet, sets, asIf ? { staged: 'enforce' } : {});
    let origin: string | undefined;
    if (v.rule) {
      const entry = this.calculator.policy(v.rule.policy)!;
      const parsedIndex = entry.lowered.origins[direction][v.rule.index]!;
      origin = entry.parsed[direction]![parsedIndex]!.origin;
    }
    return { ...v, direction, pod: `${w.namespace}/${w.pod}`, ...(origin ? { origin } : {}) };
  }

  private model(): { input: PolicyInput; sets: SetIndex } {
    const input = this.calculator.input();
    if (this.index?.input !== input) this.index = { input, sets: new SetIndex(input.sets, input.namedPortSets) };
    return this.index;
  }

  private explainPolicy(id: string, direction: Direction): PolicyExplanation {
    const { parsed, lowered } = this.calculator.policy(id)!;
    const workloads = [...this.calculator.workloads().values()];
    const rules = (parsed[direction] ?? []).map((r, i): RuleExplanation => {
      const other = direction === 'ingress' ? r.source : r.destination;
      const peers = sideWorkloads(other, workloads, this.calculator.selections);
      return {
        origin: r.origin,
        action: r.action,
        text: ruleText(r, direction),
        ...(peers ? { peers: peers.map(podRef) } : {}),
        felixRules: lowered.origins[direction].flatMap((o, felix) => (o === i ? [felix] : [])),
      };
    });
    const replaced = this.calculator.hasStaged && !parsed.staged && this.calculator.stagedReplaced().has(id);
    return {
      ...head(parsed, rules),
      ...(parsed.staged ? { staged: parsed.staged } : {}),
      ...(replaced ? { replacedByStaged: true as const } : {}),
    };
  }
}

function head(p: ParsedPolicy, rules: RuleExplanation[]): PolicyExplanation {
  return {
    id: p.id,
    kind: p.kind,
    name: p.name,
    ...(p.namespace !== undefined ? { namespace: p.namespace } : {}),
    ...(p.order !== undefined ? { order: p.order } : {}),
    rules,
  };
}

/** The pod's labels without the two every endpoint carries. */
function ownLabels(w: Workload): Readonly<Record<string, string>> {
  const own: Record<string, string> = {};
  for (const [k, v] of Object.entries(w.labels)) if (k !== LABEL_NAMESPACE && k !== LABEL_ORCHESTRATOR) own[k] = v;
  return own;
}

/** An address given bare or as a host prefix, in canonical text. */
function formatOne(address: string): string {
  return formatAddress(parseInterfaceAddress(address, 'address').bytes);
}

/** One address of each side in a family both have, IPv4 first. */
function addressPair(src: readonly string[], dst: readonly string[], srcRef: string, dstRef: string): [string, string] {
  for (const family of [4, 6]) {
    const s = src.find((a) => parseAddress(a).family === family);
    const d = dst.find((a) => parseAddress(a).family === family);
    if (s && d) return [s, d];
  }
  throw new Error(`${srcRef} and ${dstRef} have no address family in common`);
}

/** The explanation of one pod, from the cluster's resources. */
export function explainPod(resources: Iterable<Resource>, namespace: string, pod: string): PodExplanation {
  return new PolicyExplainer(resources).explainPod(namespace, pod);
}

/** The verdict on one connection, from the cluster's resources. */
export function verdict(resources: Iterable<Resource>, src: string, dst: string, protocol: Protocol, port?: number): ConnectionVerdict {
  return new PolicyExplainer(resources).verdict(src, dst, protocol, port);
}
