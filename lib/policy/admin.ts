// Kubernetes AdminNetworkPolicy and BaselineAdminNetworkPolicy → parsed policies where Calico
// puts them: every ANP in the tier `adminnetworkpolicy` (order 1000, before the default tier),
// its priority as its order; the BANP in `baselineadminnetworkpolicy` (order 10,000,000, after
// it). Both tiers pass what no policy of theirs decides, so an ANP that matches nothing, or
// passes, leaves the packet to the Calico and Kubernetes policies, and the BANP sees only what
// no policy of the default tier selected. Each rule becomes one rule per (peer, protocol), as a
// Kubernetes rule does; a direction without rules is not one the policy has.
import type {
  AdminNetworkPolicy,
  AdminNetworkPolicyEgressPeer,
  AdminNetworkPolicyPort,
  AdminNetworkPolicySubject,
  BaselineAdminNetworkPolicy,
  KubernetesProtocol,
  LabelSelector,
} from '../resources/index.js';
import type { Protocol, RuleAction } from '../../felix/policy/input.js';
import {
  type EndpointSelection,
  type ParsedPolicy,
  type ParsedRule,
  type ParsedRuleSide,
  type ParsedTier,
  type PolicyKind,
  policyTieKey,
  type PortMatch,
} from './model.js';
import { toProtocol } from './protocol.js';
import { canonicalNet, labelSelectorText, namespaceScope } from './selectors.js';

export const ADMIN_TIER = 'adminnetworkpolicy';
export const BASELINE_TIER = 'baselineadminnetworkpolicy';
/** Calico's admin tier: after any tier ordered below 1000, before the default tier; what it leaves goes on. */
export const ADMIN_TIER_SPEC: ParsedTier = { name: ADMIN_TIER, order: 1_000, defaultAction: 'Pass' };
/** Calico's baseline tier: after the default tier; what it leaves goes on to the profile, which allows. */
export const BASELINE_TIER_SPEC: ParsedTier = { name: BASELINE_TIER, order: 10_000_000, defaultAction: 'Pass' };
/** The BANP's order in its tier (it is the only Kubernetes policy there). */
export const BASELINE_POLICY_ORDER = 1000;

export function adminPolicyId(name: string): string {
  return `kanp.${ADMIN_TIER}.${name}`;
}

export function baselinePolicyId(name: string): string {
  return `kbanp.${BASELINE_TIER}.${name}`;
}

interface AdminRule {
  readonly action: RuleAction;
  readonly peers: readonly AdminNetworkPolicyEgressPeer[];
  readonly ports?: readonly AdminNetworkPolicyPort[];
}

export function parseAdminPolicy(p: AdminNetworkPolicy): ParsedPolicy {
  const id = adminPolicyId(p.metadata.name);
  return parse(p.spec, p.metadata.name, 'AdminNetworkPolicy', id, ADMIN_TIER, p.spec.priority);
}

export function parseBaselinePolicy(p: BaselineAdminNetworkPolicy): ParsedPolicy {
  const id = baselinePolicyId(p.metadata.name);
  return parse(p.spec, p.metadata.name, 'BaselineAdminNetworkPolicy', id, BASELINE_TIER, BASELINE_POLICY_ORDER);
}

function parse(
  spec: AdminNetworkPolicy['spec'] | BaselineAdminNetworkPolicy['spec'],
  name: string,
  kind: PolicyKind,
  id: string,
  tier: string,
  order: number,
): ParsedPolicy {
  const ingress = (spec.ingress ?? []).map((r): AdminRule => ({ action: r.action, peers: r.from, ...(r.ports ? { ports: r.ports } : {}) }));
  const egress = (spec.egress ?? []).map((r): AdminRule => ({ action: r.action, peers: r.to, ...(r.ports ? { ports: r.ports } : {}) }));
  return {
    id,
    kind,
    name,
    tier,
    order,
    // Calico names the converted policy <prefix>.<tier>.<name>, which is what ties break on.
    sortKey: policyTieKey(id, undefined, kind),
    selection: subjectSelection(spec.subject),
    ...(ingress.length ? { ingress: ingress.flatMap((r, i) => parseRule(r, `spec.ingress[${i}]`, 'ingress')) } : {}),
    ...(egress.length ? { egress: egress.flatMap((r, i) => parseRule(r, `spec.egress[${i}]`, 'egress')) } : {}),
  };
}

function podsIn(namespaces: LabelSelector, pods: LabelSelector, field: string): EndpointSelection {
  return { selector: labelSelectorText(pods), namespaces: namespaceScope(labelSelectorText(namespaces), field) };
}

function subjectSelection(s: AdminNetworkPolicySubject): EndpointSelection {
  if (s.pods) return podsIn(s.pods.namespaceSelector, s.pods.podSelector, 'spec.subject.pods.namespaceSelector');
  return podsIn(s.namespaces ?? {}, {}, 'spec.subject.namespaces');
}

function peerSide(peer: AdminNetworkPolicyEgressPeer, field: string): ParsedRuleSide {
  if (peer.networks) return { nets: peer.networks.map((n, i) => canonicalNet(n, `${field}.networks[${i}]`)) };
  if (peer.pods) return { selection: podsIn(peer.pods.namespaceSelector, peer.pods.podSelector, `${field}.pods.namespaceSelector`) };
  return { selection: podsIn(peer.namespaces ?? {}, {}, `${field}.namespaces`) };
}

/**
 * A rule's ports as alternatives per protocol (numbers and ranges), plus one group of names
 * without a protocol: a named port carries its own, looked up on each destination pod.
 */
function portGroups(ports: readonly AdminNetworkPolicyPort[] | undefined, field: string): { protocol?: Protocol; ports?: PortMatch[] }[] {
  if (!ports?.length) return [{}];
  const numbered = new Map<KubernetesProtocol, PortMatch[]>();
  const named: PortMatch[] = [];
  for (const p of ports) {
    if (p.namedPort !== undefined) named.push({ name: p.namedPort });
    else if (p.portNumber) add(numbered, p.portNumber.protocol, { first: p.portNumber.port, last: p.portNumber.port });
    else if (p.portRange) add(numbered, p.portRange.protocol, { first: p.portRange.start, last: p.portRange.end });
  }
  const groups: { protocol?: Protocol; ports?: PortMatch[] }[] = [...numbered].map(([protocol, list]) => ({
    protocol: toProtocol(protocol, `${field}.ports`),
    ports: list,
  }));
  if (named.length) groups.push({ ports: named });
  return groups;
}

function add(m: Map<KubernetesProtocol, PortMatch[]>, protocol: KubernetesProtocol, port: PortMatch): void {
  const list = m.get(protocol);
  if (list) list.push(port);
  else m.set(protocol, [port]);
}

function parseRule(r: AdminRule, field: string, direction: 'ingress' | 'egress'): ParsedRule[] {
  const peerField = direction === 'ingress' ? 'from' : 'to';
  const groups = portGroups(r.ports, field);
  const out: ParsedRule[] = [];
  for (const [i, peer] of r.peers.entries()) {
    const origin = `${field}.${peerField}[${i}]`;
    const side = peerSide(peer, origin);
    for (const g of groups) {
      const dstPorts: ParsedRuleSide = g.ports ? { ports: g.ports } : {};
      out.push({
        origin,
        action: r.action,
        ...(g.protocol !== undefined ? { protocol: g.protocol } : {}),
        source: direction === 'ingress' ? side : {},
        destination: direction === 'ingress' ? dstPorts : { ...side, ...dstPorts },
      });
    }
  }
  return out;
}
