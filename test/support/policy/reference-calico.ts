// The reference evaluator for Calico policy (projectcalico.org/v3 Tier, NetworkPolicy and
// GlobalNetworkPolicy) together with Kubernetes NetworkPolicy, written from Calico's documentation
// (never from lib/policy or felix/policy, which it checks). Each rule names where it comes from:
// - [tier-eval] Tier reference, "How policy is evaluated": only the tiers holding a policy that
//   applies to the endpoint see the packet, in ascending tier order; inside a tier the policies
//   run in their order; an Allow or Deny ends evaluation; a Pass sends the packet to the next
//   tier that holds a policy for the endpoint; a tier that applies but does nothing with the
//   packet drops it, unless its defaultAction is Pass.
// - [tier-spec] Tier reference, spec: an absent order sorts last, equal orders by tier name;
//   defaultAction defaults to Deny.
// - [default-tier] Tiered policy guide, "The default tier": policies without a tier, and every
//   Kubernetes NetworkPolicy, live in the default tier; Tier reference: its order is 1,000,000.
// - [knp-order] Calico converts a Kubernetes NetworkPolicy into a default-tier policy named
//   knp.default.<name> with order 1000, whose rules are Allow (the Kubernetes API reference
//   says what they match: reference.ts).
// - [policy-order] NetworkPolicy reference, order: the lowest order applies first, no order
//   last; equal orders by name (felix breaks ties by name, then namespace, then kind).
// - [rule-eval] NetworkPolicy reference, rules: the first rule that matches takes its action;
//   Log logs and goes on; a policy none of whose rules match leaves the packet to the next
//   policy of the tier.
// - [profile] Profile reference and the Kubernetes datastore: past the last tier an endpoint's
//   profiles decide; a pod's namespace profile (kns.<namespace>) allows everything, and an
//   endpoint no policy applies to is left to it, so it is allowed.
// - a NetworkPolicy selects endpoints of its own namespace, and its rules' selectors too unless
//   a namespaceSelector is given; a GlobalNetworkPolicy's selectors range over every namespace
//   (its spec.namespaceSelector narrows the endpoints it applies to);
// - `types`, when absent: Ingress, unless there are egress rules and no ingress rules (Egress),
//   or both (Ingress and Egress);
// - selectors see a pod's labels plus projectcalico.org/namespace and
//   projectcalico.org/orchestrator, which Calico sets on every workload endpoint.
// - AdminNetworkPolicy and BaselineAdminNetworkPolicy: reference-admin.ts, in their two tiers.
import { cidrContains, parseAddress, parseCidr } from '../../../ip/index.js';
import { parseCalicoSelector } from './calico-selector.js';
import { ADMIN_TIERS, type AdminNetworkPolicy, adminApplying, type BaselineAdminNetworkPolicy } from './reference-admin.js';
import type { L4Protocol, Labels, Model, ModelPod, NetworkPolicy, PolicyType, Probe } from './model.js';
import { podKey } from './model.js';
import { k8sPolicyAllows, k8sSelects, truthTable } from './reference.js';
import type { TruthTable } from './truth-table.js';

export type CalicoAction = 'Allow' | 'Deny' | 'Pass' | 'Log';
export type CalicoProtocol = L4Protocol | 'ICMP' | 'ICMPv6' | number;

export interface CalicoEntityRule {
  readonly nets?: readonly string[];
  readonly notNets?: readonly string[];
  readonly selector?: string;
  readonly notSelector?: string;
  readonly namespaceSelector?: string;
  readonly ports?: readonly (number | string)[];
  readonly notPorts?: readonly (number | string)[];
}

export interface CalicoRule {
  readonly action: CalicoAction;
  readonly protocol?: CalicoProtocol;
  readonly notProtocol?: CalicoProtocol;
  readonly source?: CalicoEntityRule;
  readonly destination?: CalicoEntityRule;
}

export interface CalicoPolicy {
  readonly apiVersion: 'projectcalico.org/v3';
  readonly kind: 'NetworkPolicy' | 'GlobalNetworkPolicy';
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly spec: {
    /** Absent: the default tier. */
    readonly tier?: string;
    readonly order?: number;
    readonly selector?: string;
    /** GlobalNetworkPolicy only: the namespaces whose endpoints it applies to. */
    readonly namespaceSelector?: string;
    readonly types?: readonly PolicyType[];
    readonly ingress?: readonly CalicoRule[];
    readonly egress?: readonly CalicoRule[];
  };
}

export interface CalicoTier {
  readonly apiVersion: 'projectcalico.org/v3';
  readonly kind: 'Tier';
  readonly metadata: { readonly name: string };
  readonly spec: { readonly order?: number; readonly defaultAction?: 'Deny' | 'Pass' };
}

export function calicoPolicyTypes(p: CalicoPolicy): readonly PolicyType[] {
  if (p.spec.types) return p.spec.types;
  const ingress = (p.spec.ingress?.length ?? 0) > 0;
  const egress = (p.spec.egress?.length ?? 0) > 0;
  if (egress && ingress) return ['Ingress', 'Egress'];
  return egress ? ['Egress'] : ['Ingress'];
}

const PROTOCOL_NUMBERS: Record<string, number> = { TCP: 6, UDP: 17, SCTP: 132, ICMP: 1, ICMPv6: 58 };
const protocolNumber = (p: CalicoProtocol): number => (typeof p === 'number' ? p : PROTOCOL_NUMBERS[p]!);

const selectorCache = new Map<string, (l: Labels) => boolean>();
function sel(text: string): (l: Labels) => boolean {
  let f = selectorCache.get(text);
  if (!f) selectorCache.set(text, (f = parseCalicoSelector(text)));
  return f;
}

/** A pod's labels as Calico's selectors see them. */
function endpointLabels(pod: ModelPod): Labels {
  return { ...pod.labels, 'projectcalico.org/namespace': pod.namespace, 'projectcalico.org/orchestrator': 'k8s' };
}

function nsLabels(model: Model, name: string): Labels {
  const ns = model.namespaces.find((n) => n.name === name);
  if (!ns) throw new Error(`reference: namespace ${name} is not in the model`);
  return ns.labels;
}

function inNets(ip: string, nets: readonly string[]): boolean {
  const a = parseAddress(ip);
  return nets.some((n) => cidrContains(parseCidr(n.includes('/') ? n : `${n}/${n.includes(':') ? 128 : 32}`, 'nets', false), a));
}

function portMatches(spec: number | string, pod: ModelPod, probe: Probe): boolean {
  if (typeof spec === 'number') return probe.port === spec;
  const range = /^(\d+):(\d+)$/.exec(spec);
  if (range) return probe.port >= Number(range[1]) && probe.port <= Number(range[2]);
  if (/^\d+$/.test(spec)) return probe.port === Number(spec);
  return pod.ports.some((c) => c.name === spec && c.protocol === probe.protocol && c.containerPort === probe.port);
}

/** `pod` against one side of a rule; `isDestination` says whether ports apply to it (the probe's port). */
function entityMatches(
  model: Model,
  policy: CalicoPolicy,
  e: CalicoEntityRule | undefined,
  pod: ModelPod,
  isDestination: boolean,
  probe: Probe,
): boolean {
  if (!e) return true;
  if (e.nets && !inNets(pod.ip, e.nets)) return false;
  if (e.notNets && inNets(pod.ip, e.notNets)) return false;
  const scoped = (): boolean =>
    e.namespaceSelector !== undefined
      ? sel(e.namespaceSelector)(nsLabels(model, pod.namespace))
      : policy.kind === 'GlobalNetworkPolicy' || pod.namespace === policy.metadata.namespace;
  if ((e.selector !== undefined || e.namespaceSelector !== undefined) && !(scoped() && sel(e.selector ?? 'all()')(endpointLabels(pod))))
    return false;
  if (e.notSelector !== undefined && scoped() && sel(e.notSelector)(endpointLabels(pod))) return false;
  if (e.ports || e.notPorts) {
    if (!isDestination) throw new Error('reference: source ports are not modelled (probes use ephemeral source ports)');
    if (e.ports && !e.ports.some((p) => portMatches(p, pod, probe))) return false;
    if (e.notPorts?.some((p) => portMatches(p, pod, probe))) return false;
  }
  return true;
}

function ruleMatches(model: Model, policy: CalicoPolicy, r: CalicoRule, from: ModelPod, to: ModelPod, probe: Probe): boolean {
  const proto = PROTOCOL_NUMBERS[probe.protocol]!;
  // A port number means nothing without a protocol (Calico refuses it); a named port carries its
  // own protocol, so it may stand alone.
  const numbered = [r.source?.ports, r.source?.notPorts, r.destination?.ports, r.destination?.notPorts].some((l) =>
    l?.some((p) => typeof p === 'number' || /^\d+(:\d+)?$/.test(p)),
  );
  if (numbered && r.protocol === undefined) throw new Error('reference: port numbers need a protocol (Calico refuses them without one)');
  if (r.protocol !== undefined && protocolNumber(r.protocol) !== proto) return false;
  if (r.notProtocol !== undefined && protocolNumber(r.notProtocol) === proto) return false;
  return entityMatches(model, policy, r.source, from, false, probe) && entityMatches(model, policy, r.destination, to, true, probe);
}

function appliesTo(model: Model, p: CalicoPolicy, pod: ModelPod, type: PolicyType): boolean {
  if (!calicoPolicyTypes(p).includes(type)) return false;
  if (p.kind === 'NetworkPolicy' && p.metadata.namespace !== pod.namespace) return false;
  if (
    p.kind === 'GlobalNetworkPolicy' &&
    p.spec.namespaceSelector !== undefined &&
    !sel(p.spec.namespaceSelector)(nsLabels(model, pod.namespace))
  )
    return false;
  return sel(p.spec.selector?.trim() ? p.spec.selector : 'all()')(endpointLabels(pod));
}

export interface ClusterPolicies {
  readonly calico: readonly CalicoPolicy[];
  readonly kubernetes: readonly NetworkPolicy[];
  /** Tier resources; the default tier is there without one, and so are the admin policies' two. */
  readonly tiers?: readonly CalicoTier[];
  readonly admin?: readonly AdminNetworkPolicy[];
  readonly baseline?: BaselineAdminNetworkPolicy;
}

/** What one policy does with a packet: an action, or nothing (the next policy of the tier sees it). */
type Decision = 'Allow' | 'Deny' | 'Pass' | undefined;

/** A policy of any kind as a tier sees it. */
interface TieredPolicy {
  readonly tier: string;
  readonly order?: number;
  /** [policy-order]: `<name>/<namespace>/<kind>`. */
  readonly sortKey: string;
  readonly decide: () => Decision;
}

const DEFAULT_TIER = { name: 'default', order: 1_000_000, defaultAction: 'Deny' as const }; // [default-tier]

function byOrder(a: { order?: number }, b: { order?: number }): number {
  const oa = a.order ?? Number.POSITIVE_INFINITY;
  const ob = b.order ?? Number.POSITIVE_INFINITY;
  return oa === ob ? 0 : oa < ob ? -1 : 1;
}

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The policies of every kind that apply to `endpoint` in direction `type`, each able to decide on from → to. */
function applying(
  model: Model,
  policies: ClusterPolicies,
  endpoint: ModelPod,
  type: PolicyType,
  from: ModelPod,
  to: ModelPod,
  probe: Probe,
): TieredPolicy[] {
  const calico = policies.calico
    .filter((p) => appliesTo(model, p, endpoint, type))
    .map(
      (p): TieredPolicy => ({
        tier: p.spec.tier ?? 'default',
        ...(p.spec.order !== undefined ? { order: p.spec.order } : {}),
        sortKey: `${p.metadata.name}/${p.metadata.namespace ?? ''}/${p.kind}`,
        decide: () => {
          // [rule-eval]
          for (const r of (type === 'Ingress' ? p.spec.ingress : p.spec.egress) ?? []) {
            if (!ruleMatches(model, p, r, from, to, probe)) continue;
            if (r.action !== 'Log') return r.action;
          }
          return undefined;
        },
      }),
    );
  const kubernetes = policies.kubernetes
    .filter((p) => k8sSelects(p, endpoint, type))
    .map(
      (p): TieredPolicy => ({
        // [knp-order]
        tier: 'default',
        order: 1000,
        sortKey: `knp.default.${p.metadata.name}/${p.metadata.namespace}/KubernetesNetworkPolicy`,
        decide: () => (k8sPolicyAllows(model, p, type, from, to, probe) ? 'Allow' : undefined),
      }),
    );
  const admin = adminApplying(model, policies.admin ?? [], policies.baseline, endpoint, type, from, to, probe);
  return [...calico, ...kubernetes, ...admin];
}

function direction(model: Model, policies: ClusterPolicies, type: PolicyType, from: ModelPod, to: ModelPod, probe: Probe): boolean {
  const endpoint = type === 'Ingress' ? to : from;
  const tierSpecs = new Map<string, { name: string; order?: number; defaultAction: 'Deny' | 'Pass' }>([
    [DEFAULT_TIER.name, DEFAULT_TIER],
    ...ADMIN_TIERS.map((t) => [t.name, t] as const),
  ]);
  for (const t of policies.tiers ?? [])
    if (!tierSpecs.has(t.metadata.name))
      tierSpecs.set(t.metadata.name, { name: t.metadata.name, ...t.spec, defaultAction: t.spec.defaultAction ?? 'Deny' }); // [tier-spec]
  // [tier-eval]: only tiers holding a policy for the endpoint.
  const byTier = new Map<string, TieredPolicy[]>();
  for (const p of applying(model, policies, endpoint, type, from, to, probe)) {
    if (!tierSpecs.has(p.tier)) throw new Error(`reference: a policy is in tier ${p.tier}, which no Tier defines`);
    byTier.set(p.tier, [...(byTier.get(p.tier) ?? []), p]);
  }
  const tiers = [...byTier.keys()].map((n) => tierSpecs.get(n)!).sort((a, b) => byOrder(a, b) || byText(a.name, b.name)); // [tier-spec]
  nextTier: for (const tier of tiers) {
    const inOrder = byTier.get(tier.name)!.sort((a, b) => byOrder(a, b) || byText(a.sortKey, b.sortKey)); // [policy-order]
    for (const p of inOrder) {
      const d = p.decide();
      if (d === 'Allow') return true;
      if (d === 'Deny') return false;
      if (d === 'Pass') continue nextTier;
    }
    if (tier.defaultAction === 'Pass') continue;
    return false;
  }
  return true; // [profile]
}

export function calicoAllows(model: Model, policies: ClusterPolicies, from: ModelPod, to: ModelPod, probe: Probe): boolean {
  // A pod's traffic to itself never leaves its network namespace.
  if (podKey(from) === podKey(to)) return true;
  return direction(model, policies, 'Egress', from, to, probe) && direction(model, policies, 'Ingress', from, to, probe);
}

export function calicoTruthTable(model: Model, policies: ClusterPolicies, probes: readonly Probe[]): TruthTable {
  return truthTable(model, probes, (f, t, p) => calicoAllows(model, policies, f, t, p));
}
