// The reference evaluator for Kubernetes NetworkPolicy: a pure function from (namespaces, pods,
// policies) to the truth table of the probe matrix, written from the Kubernetes documentation
// and API reference alone (never from lib/policy or felix/policy, which it checks):
// - a pod is isolated for ingress (egress) when at least one policy of that type selects it;
//   an isolated pod's traffic in that direction is allowed iff some rule of some selecting
//   policy allows it (the union); a connection needs the source's egress AND the
//   destination's ingress;
// - policyTypes, when absent, is Ingress, plus Egress when the policy has egress rules;
// - a peer's podSelector selects in the policy's namespace, its namespaceSelector selects
//   namespaces, both in one peer means both; ipBlock matches the pod's address against cidr
//   minus every except; missing or empty from/to matches everything;
// - a port is numeric (with endPort an inclusive range) or named, resolved against the
//   destination pod's container ports; protocol defaults to TCP; missing or empty ports match
//   every port; a port entry without a port matches every port of its protocol;
// - a pod cannot block access to itself.
import { cidrContains, parseAddress, parseCidr } from '../../../ip/index.js';
import {
  labelSelectorMatches,
  type Model,
  type ModelPod,
  type NetworkPolicy,
  type NetworkPolicyPeer,
  type NetworkPolicyPort,
  type PolicyType,
  type Probe,
  podKey,
} from './model.js';
import { TruthTable } from './truth-table.js';

/** One direction's outcome: no policy isolates the pod, or the union of rules allowed / did not. */
export type DirectionVerdict = 'not-isolated' | 'allowed' | 'denied';

export function effectivePolicyTypes(policy: NetworkPolicy): readonly PolicyType[] {
  if (policy.spec.policyTypes) return policy.spec.policyTypes;
  return (policy.spec.egress?.length ?? 0) > 0 ? ['Ingress', 'Egress'] : ['Ingress'];
}

/** Whether `ip` lies in the block: inside cidr and inside none of the excepts. */
export function inIpBlock(ip: string, block: { cidr: string; except?: readonly string[] }): boolean {
  const a = parseAddress(ip);
  if (!cidrContains(parseCidr(block.cidr, 'ipBlock.cidr', false), a)) return false;
  return !(block.except ?? []).some((e) => cidrContains(parseCidr(e, 'ipBlock.except', false), a));
}

function namespaceLabels(model: Model, name: string) {
  const ns = model.namespaces.find((n) => n.name === name);
  if (!ns) throw new Error(`reference: namespace ${name} is not in the model`);
  return ns.labels;
}

function peerMatches(model: Model, policyNamespace: string, peer: NetworkPolicyPeer, pod: ModelPod): boolean {
  if (peer.ipBlock) {
    if (peer.podSelector || peer.namespaceSelector) throw new Error('reference: ipBlock cannot be combined with a selector in one peer');
    return inIpBlock(pod.ip, peer.ipBlock);
  }
  if (!peer.podSelector && !peer.namespaceSelector) throw new Error('reference: a peer needs podSelector, namespaceSelector or ipBlock');
  const inNamespace = peer.namespaceSelector
    ? labelSelectorMatches(peer.namespaceSelector, namespaceLabels(model, pod.namespace))
    : pod.namespace === policyNamespace;
  return inNamespace && (!peer.podSelector || labelSelectorMatches(peer.podSelector, pod.labels));
}

function peersMatch(model: Model, policyNamespace: string, peers: readonly NetworkPolicyPeer[] | undefined, pod: ModelPod): boolean {
  if (!peers || peers.length === 0) return true;
  return peers.some((p) => peerMatches(model, policyNamespace, p, pod));
}

/** A policy port against a connection to `destination` on `probe`. */
function portMatches(port: NetworkPolicyPort, destination: ModelPod, probe: Probe): boolean {
  if ((port.protocol ?? 'TCP') !== probe.protocol) return false;
  if (port.port === undefined) return true;
  if (typeof port.port === 'string') {
    if (port.endPort !== undefined) throw new Error('reference: endPort needs a numeric port');
    return destination.ports.some((c) => c.name === port.port && c.protocol === probe.protocol && c.containerPort === probe.port);
  }
  const last = port.endPort ?? port.port;
  return probe.port >= port.port && probe.port <= last;
}

function portsMatch(ports: readonly NetworkPolicyPort[] | undefined, destination: ModelPod, probe: Probe): boolean {
  if (!ports || ports.length === 0) return true;
  return ports.some((p) => portMatches(p, destination, probe));
}

/** Whether one policy's rules of `type` admit from → to: some rule's peers and ports both match. */
export function k8sPolicyAllows(model: Model, p: NetworkPolicy, type: PolicyType, from: ModelPod, to: ModelPod, probe: Probe): boolean {
  if (type === 'Ingress')
    return (p.spec.ingress ?? []).some((r) => peersMatch(model, p.metadata.namespace, r.from, from) && portsMatch(r.ports, to, probe));
  return (p.spec.egress ?? []).some((r) => peersMatch(model, p.metadata.namespace, r.to, to) && portsMatch(r.ports, to, probe));
}

/** Whether a policy applies to `pod` in direction `type`: its namespace, its policyTypes, its podSelector. */
export function k8sSelects(p: NetworkPolicy, pod: ModelPod, type: PolicyType): boolean {
  return (
    p.metadata.namespace === pod.namespace && effectivePolicyTypes(p).includes(type) && labelSelectorMatches(p.spec.podSelector, pod.labels)
  );
}

function selecting(policies: readonly NetworkPolicy[], pod: ModelPod, type: PolicyType): NetworkPolicy[] {
  return policies.filter(
    (p) =>
      p.metadata.namespace === pod.namespace &&
      effectivePolicyTypes(p).includes(type) &&
      labelSelectorMatches(p.spec.podSelector, pod.labels),
  );
}

/** The destination's ingress side of from → to. */
export function k8sIngress(model: Model, policies: readonly NetworkPolicy[], from: ModelPod, to: ModelPod, probe: Probe): DirectionVerdict {
  const applying = selecting(policies, to, 'Ingress');
  if (applying.length === 0) return 'not-isolated';
  const allowed = applying.some((p) =>
    (p.spec.ingress ?? []).some((r) => peersMatch(model, p.metadata.namespace, r.from, from) && portsMatch(r.ports, to, probe)),
  );
  return allowed ? 'allowed' : 'denied';
}

/** The source's egress side of from → to. */
export function k8sEgress(model: Model, policies: readonly NetworkPolicy[], from: ModelPod, to: ModelPod, probe: Probe): DirectionVerdict {
  const applying = selecting(policies, from, 'Egress');
  if (applying.length === 0) return 'not-isolated';
  const allowed = applying.some((p) =>
    (p.spec.egress ?? []).some((r) => peersMatch(model, p.metadata.namespace, r.to, to) && portsMatch(r.ports, to, probe)),
  );
  return allowed ? 'allowed' : 'denied';
}

const passes = (v: DirectionVerdict): boolean => v !== 'denied';

export function k8sAllows(model: Model, policies: readonly NetworkPolicy[], from: ModelPod, to: ModelPod, probe: Probe): boolean {
  if (podKey(from) === podKey(to)) return true;
  return passes(k8sEgress(model, policies, from, to, probe)) && passes(k8sIngress(model, policies, from, to, probe));
}

/** Fills a truth table for every pod pair and probe with `allows`. */
export function truthTable(
  model: Model,
  probes: readonly Probe[],
  allows: (from: ModelPod, to: ModelPod, probe: Probe) => boolean,
): TruthTable {
  const table = new TruthTable(model.pods.map(podKey), probes);
  for (const probe of probes)
    for (const from of model.pods) for (const to of model.pods) table.set(podKey(from), podKey(to), probe, allows(from, to, probe));
  return table;
}

export function k8sTruthTable(model: Model, policies: readonly NetworkPolicy[], probes: readonly Probe[]): TruthTable {
  return truthTable(model, probes, (f, t, p) => k8sAllows(model, policies, f, t, p));
}
