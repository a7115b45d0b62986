// The reference evaluator for Calico policy (projectcalico.org/v3 NetworkPolicy and
// GlobalNetworkPolicy) together with Kubernetes NetworkPolicy, from Calico's documentation:
// - an endpoint's traffic in one direction goes through the tiers in order: first the Calico
//   tier (NetworkPolicy and GlobalNetworkPolicy by `order`, lower first, no order last, then by
//   name), then the Kubernetes tier; a tier with no policy selecting the endpoint is skipped;
// - in a tier the first matching Allow or Deny decides, Log goes on, Pass leaves for the next
//   tier; a tier whose policies select the endpoint but decide nothing drops the packet;
//   passing every tier allows it;
// - the Kubernetes tier decides as reference.ts does (isolation, union of allows);
// - a NetworkPolicy selects endpoints of its own namespace, and its rules' selectors too unless
//   a namespaceSelector is given; a GlobalNetworkPolicy's selectors range over every namespace
//   (its spec.namespaceSelector narrows the endpoints it applies to);
// - `types`, when absent: Ingress, unless there are egress rules and no ingress rules (Egress),
//   or both (Ingress and Egress);
// - selectors see a pod's labels plus projectcalico.org/namespace and
//   projectcalico.org/orchestrator, which Calico sets on every workload endpoint.
import { cidrContains, parseAddress, parseCidr } from '../../../ip/index.js';
import { parseCalicoSelector } from './calico-selector.js';
import type { L4Protocol, Labels, Model, ModelPod, NetworkPolicy, PolicyType, Probe } from './model.js';
import { podKey } from './model.js';
import { type DirectionVerdict, k8sEgress, k8sIngress, truthTable } from './reference.js';
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
    readonly order?: number;
    readonly selector?: string;
    /** GlobalNetworkPolicy only: the namespaces whose endpoints it applies to. */
    readonly namespaceSelector?: string;
    readonly types?: readonly PolicyType[];
    readonly ingress?: readonly CalicoRule[];
    readonly egress?: readonly CalicoRule[];
  };
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

/** Calico's order: by `order` (none = after every ordered one), then by name. */
export function calicoOrder(a: CalicoPolicy, b: CalicoPolicy): number {
  const oa = a.spec.order ?? Number.POSITIVE_INFINITY;
  const ob = b.spec.order ?? Number.POSITIVE_INFINITY;
  if (oa !== ob) return oa < ob ? -1 : 1;
  const na = `${a.metadata.namespace ?? ''}/${a.metadata.name}`;
  const nb = `${b.metadata.namespace ?? ''}/${b.metadata.name}`;
  return na < nb ? -1 : na > nb ? 1 : 0;
}

export interface ClusterPolicies {
  readonly calico: readonly CalicoPolicy[];
  readonly kubernetes: readonly NetworkPolicy[];
}

/** The Calico tier for `endpoint` in one direction: a decision, Pass / skipped (go on), or end-of-tier drop. */
function calicoTier(
  model: Model,
  calico: readonly CalicoPolicy[],
  endpoint: ModelPod,
  type: PolicyType,
  from: ModelPod,
  to: ModelPod,
  probe: Probe,
): 'allowed' | 'denied' | 'next' {
  const applying = calico.filter((p) => appliesTo(model, p, endpoint, type)).sort(calicoOrder);
  if (applying.length === 0) return 'next';
  for (const p of applying) {
    for (const r of (type === 'Ingress' ? p.spec.ingress : p.spec.egress) ?? []) {
      if (!ruleMatches(model, p, r, from, to, probe)) continue;
      if (r.action === 'Allow') return 'allowed';
      if (r.action === 'Deny') return 'denied';
      if (r.action === 'Pass') return 'next';
    }
  }
  return 'denied';
}

function direction(model: Model, policies: ClusterPolicies, type: PolicyType, from: ModelPod, to: ModelPod, probe: Probe): boolean {
  const endpoint = type === 'Ingress' ? to : from;
  const tier = calicoTier(model, policies.calico, endpoint, type, from, to, probe);
  if (tier !== 'next') return tier === 'allowed';
  const k: DirectionVerdict = (type === 'Ingress' ? k8sIngress : k8sEgress)(model, policies.kubernetes, from, to, probe);
  return k !== 'denied';
}

export function calicoAllows(model: Model, policies: ClusterPolicies, from: ModelPod, to: ModelPod, probe: Probe): boolean {
  // A pod's traffic to itself never leaves its network namespace.
  if (podKey(from) === podKey(to)) return true;
  return direction(model, policies, 'Egress', from, to, probe) && direction(model, policies, 'Ingress', from, to, probe);
}

export function calicoTruthTable(model: Model, policies: ClusterPolicies, probes: readonly Probe[]): TruthTable {
  return truthTable(model, probes, (f, t, p) => calicoAllows(model, policies, f, t, p));
}
