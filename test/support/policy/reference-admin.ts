// The reference evaluator's part for Kubernetes AdminNetworkPolicy and BaselineAdminNetworkPolicy
// (policy.networking.k8s.io/v1alpha1), written from the network-policy-api reference and KEP 2091
// and from Calico's tiered-policy guide (never from lib/policy, which it checks). It says which
// policies apply to an endpoint and what each does with a packet; reference-calico.ts runs them
// in their tiers. Each rule names where it comes from:
// - [calico-anp-tier] Calico's tiered-policy guide: every AdminNetworkPolicy lives in the tier
//   `adminnetworkpolicy`, order 1,000, default action Pass; an ANP's priority is its order there.
// - [calico-banp-tier] the same guide: the BaselineAdminNetworkPolicy lives in the tier
//   `baselineadminnetworkpolicy`, order 10,000,000 (after the default tier), default action Pass.
// - [anp-priority] API reference, spec.priority: lower values are checked first, and every ANP
//   comes before any NetworkPolicy or BANP; equal priorities are left undefined by the API
//   (Calico then orders by the converted name, kanp.adminnetworkpolicy.<name>).
// - [anp-subject] API reference, subject: `namespaces` picks every pod of the namespaces it
//   selects; `pods` picks the pods its podSelector selects inside the namespaces its
//   namespaceSelector selects.
// - [anp-rules] API reference, ingress/egress: rules of one policy take precedence in the order
//   written; the first whose peers and ports match the traffic applies its action.
// - [anp-pass] API reference, action Pass: the traffic skips the remaining ANP rules and goes to
//   the NetworkPolicies selecting the pod, or, when none does, to the BANP.
// - [banp-rules] API reference, BANP ingress/egress: its rules apply to traffic no ANP or
//   NetworkPolicy rule matched; its actions are Allow and Deny.
// - [peers] API reference, peers: `namespaces` is every pod of the selected namespaces; `pods`
//   the pods of a NamespacedPod; `networks` (egress) any address inside one of the CIDRs.
// - [ports] API reference, ports: absent matches every port; portNumber one port of a protocol,
//   portRange start to end inclusive, namedPort the pod's container port of that name.
import { cidrContains, parseAddress, parseCidr } from '../../../ip/index.js';
import {
  type LabelSelector,
  labelSelectorMatches,
  type L4Protocol,
  type Model,
  type ModelPod,
  type PolicyType,
  type Probe,
} from './model.js';

export interface NamespacedPod {
  readonly namespaceSelector: LabelSelector;
  readonly podSelector: LabelSelector;
}

/** Exactly one field, as the API requires. */
export interface AdminPeer {
  readonly namespaces?: LabelSelector;
  readonly pods?: NamespacedPod;
  /** Egress only. */
  readonly networks?: readonly string[];
}

export interface AdminPort {
  readonly portNumber?: { readonly protocol?: L4Protocol; readonly port: number };
  readonly namedPort?: string;
  readonly portRange?: { readonly protocol?: L4Protocol; readonly start: number; readonly end: number };
}

export interface AdminIngressRule<A> {
  readonly name?: string;
  readonly action: A;
  readonly from: readonly AdminPeer[];
  readonly ports?: readonly AdminPort[];
}

export interface AdminEgressRule<A> {
  readonly name?: string;
  readonly action: A;
  readonly to: readonly AdminPeer[];
  readonly ports?: readonly AdminPort[];
}

export interface AdminSubject {
  readonly namespaces?: LabelSelector;
  readonly pods?: NamespacedPod;
}

export interface AdminNetworkPolicy {
  readonly apiVersion: 'policy.networking.k8s.io/v1alpha1';
  readonly kind: 'AdminNetworkPolicy';
  readonly metadata: { readonly name: string };
  readonly spec: {
    readonly priority: number;
    readonly subject: AdminSubject;
    readonly ingress?: readonly AdminIngressRule<'Allow' | 'Deny' | 'Pass'>[];
    readonly egress?: readonly AdminEgressRule<'Allow' | 'Deny' | 'Pass'>[];
  };
}

export interface BaselineAdminNetworkPolicy {
  readonly apiVersion: 'policy.networking.k8s.io/v1alpha1';
  readonly kind: 'BaselineAdminNetworkPolicy';
  readonly metadata: { readonly name: 'default' };
  readonly spec: {
    readonly subject: AdminSubject;
    readonly ingress?: readonly AdminIngressRule<'Allow' | 'Deny'>[];
    readonly egress?: readonly AdminEgressRule<'Allow' | 'Deny'>[];
  };
}

/** The two tiers, as reference-calico.ts orders tiers. */
export const ADMIN_TIERS = [
  { name: 'adminnetworkpolicy', order: 1_000, defaultAction: 'Pass' as const }, // [calico-anp-tier]
  { name: 'baselineadminnetworkpolicy', order: 10_000_000, defaultAction: 'Pass' as const }, // [calico-banp-tier]
];

/** A policy as a tier sees it (the shape reference-calico.ts runs). */
export interface AdminTiered {
  readonly tier: string;
  readonly order?: number;
  readonly sortKey: string;
  readonly decide: () => 'Allow' | 'Deny' | 'Pass' | undefined;
}

function nsLabels(model: Model, name: string) {
  const ns = model.namespaces.find((n) => n.name === name);
  if (!ns) throw new Error(`reference: namespace ${name} is not in the model`);
  return ns.labels;
}

function inNamespacedPod(model: Model, p: NamespacedPod, pod: ModelPod): boolean {
  return labelSelectorMatches(p.namespaceSelector, nsLabels(model, pod.namespace)) && labelSelectorMatches(p.podSelector, pod.labels);
}

/** [anp-subject] */
function subjectHolds(model: Model, s: AdminSubject, pod: ModelPod): boolean {
  if (s.pods) return inNamespacedPod(model, s.pods, pod);
  return labelSelectorMatches(s.namespaces ?? {}, nsLabels(model, pod.namespace));
}

/** [peers] */
function peerHolds(model: Model, peer: AdminPeer, pod: ModelPod): boolean {
  if (peer.networks) {
    const a = parseAddress(pod.ip);
    return peer.networks.some((n) => cidrContains(parseCidr(n, 'networks', false), a));
  }
  if (peer.pods) return inNamespacedPod(model, peer.pods, pod);
  return labelSelectorMatches(peer.namespaces ?? {}, nsLabels(model, pod.namespace));
}

/** [ports]: `to` is the destination pod, whose container ports a named port names. */
function portHolds(port: AdminPort, to: ModelPod, probe: Probe): boolean {
  if (port.portNumber) return (port.portNumber.protocol ?? 'TCP') === probe.protocol && port.portNumber.port === probe.port;
  if (port.portRange)
    return (port.portRange.protocol ?? 'TCP') === probe.protocol && probe.port >= port.portRange.start && probe.port <= port.portRange.end;
  return to.ports.some((c) => c.name === port.namedPort && c.protocol === probe.protocol && c.containerPort === probe.port);
}

/** [anp-rules]: the first rule whose peers and ports hold decides; none: no decision. */
function decide<A>(
  model: Model,
  rules: readonly { readonly action: A; readonly peers: readonly AdminPeer[]; readonly ports?: readonly AdminPort[] }[],
  other: ModelPod,
  to: ModelPod,
  probe: Probe,
): A | undefined {
  for (const r of rules) {
    if (!r.peers.some((p) => peerHolds(model, p, other))) continue;
    if (r.ports && !r.ports.some((p) => portHolds(p, to, probe))) continue;
    return r.action;
  }
  return undefined;
}

function rulesOf<A>(spec: { ingress?: readonly AdminIngressRule<A>[]; egress?: readonly AdminEgressRule<A>[] }, type: PolicyType) {
  return type === 'Ingress'
    ? (spec.ingress ?? []).map((r) => ({ action: r.action, peers: r.from, ...(r.ports ? { ports: r.ports } : {}) }))
    : (spec.egress ?? []).map((r) => ({ action: r.action, peers: r.to, ...(r.ports ? { ports: r.ports } : {}) }));
}

/** The ANPs and the BANP that apply to `endpoint` in direction `type`, each able to decide on from → to. */
export function adminApplying(
  model: Model,
  admin: readonly AdminNetworkPolicy[],
  baseline: BaselineAdminNetworkPolicy | undefined,
  endpoint: ModelPod,
  type: PolicyType,
  from: ModelPod,
  to: ModelPod,
  probe: Probe,
): AdminTiered[] {
  const other = type === 'Ingress' ? from : to;
  const out: AdminTiered[] = [];
  for (const p of admin) {
    const rules = rulesOf(p.spec, type);
    // A policy with no rules of a direction does nothing there; its tier would pass anyway.
    if (rules.length === 0 || !subjectHolds(model, p.spec.subject, endpoint)) continue;
    const name = `kanp.adminnetworkpolicy.${p.metadata.name}`;
    out.push({
      tier: 'adminnetworkpolicy', // [calico-anp-tier]
      order: p.spec.priority, // [anp-priority]
      sortKey: `${name}//AdminNetworkPolicy`,
      decide: () => decide(model, rules, other, to, probe), // [anp-rules], [anp-pass]: Pass leaves the tier
    });
  }
  if (baseline) {
    const rules = rulesOf(baseline.spec, type);
    if (rules.length > 0 && subjectHolds(model, baseline.spec.subject, endpoint))
      out.push({
        tier: 'baselineadminnetworkpolicy', // [calico-banp-tier], [banp-rules]
        order: 1000,
        sortKey: `kbanp.baselineadminnetworkpolicy.${baseline.metadata.name}//BaselineAdminNetworkPolicy`,
        decide: () => decide(model, rules, other, to, probe),
      });
  }
  return out;
}
