// Kubernetes NetworkPolicy → a parsed policy of the default tier at order 1000, as Calico's
// converter reads one (so it interleaves with Calico's own policies by order): the podSelector within the policy's namespace picks the endpoints; each rule is
// Allow rules, one per (peer, protocol), since a rule's match is a conjunction and the peers
// and the protocols of a rule are alternatives. A policy of a type with no rules of that type
// isolates (present, empty).
import type { KubernetesNetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort, PolicyType } from '../resources/index.js';
import {
  DEFAULT_TIER,
  type EndpointSelection,
  KUBERNETES_POLICY_ORDER,
  type ParsedPolicy,
  type ParsedRule,
  type ParsedRuleSide,
  policyTieKey,
  type PortMatch,
} from './model.js';
import { canonicalNet, labelSelectorText, namespaceScope } from './selectors.js';
import { toProtocol } from './protocol.js';
import type { Protocol } from '../../felix/policy/input.js';

export function kubernetesPolicyId(namespace: string, name: string): string {
  return `knp.default.${namespace}.${name}`;
}

/** Kubernetes' rule when policyTypes is omitted: Ingress, plus Egress when there are egress rules. */
export function kubernetesPolicyTypes(spec: KubernetesNetworkPolicy['spec']): PolicyType[] {
  if (spec.policyTypes?.length) return spec.policyTypes;
  return spec.egress?.length ? ['Ingress', 'Egress'] : ['Ingress'];
}

export function parseKubernetesPolicy(p: KubernetesNetworkPolicy): ParsedPolicy {
  const namespace = p.metadata.namespace ?? 'default';
  const spec = p.spec;
  const types = kubernetesPolicyTypes(spec);
  const rules = (
    list: readonly { ports?: NetworkPolicyPort[]; peers?: NetworkPolicyPeer[] }[],
    field: string,
    direction: 'ingress' | 'egress',
  ) => list.flatMap((r, i) => parseRule(r.peers, r.ports, namespace, `${field}[${i}]`, direction));
  return {
    id: kubernetesPolicyId(namespace, p.metadata.name),
    kind: 'KubernetesNetworkPolicy',
    name: p.metadata.name,
    namespace,
    tier: DEFAULT_TIER,
    order: KUBERNETES_POLICY_ORDER,
    sortKey: policyTieKey(`knp.default.${p.metadata.name}`, namespace, 'KubernetesNetworkPolicy'),
    selection: { selector: labelSelectorText(spec.podSelector ?? {}), namespaces: { kind: 'name', name: namespace } },
    ...(types.includes('Ingress')
      ? {
          ingress: rules(
            (spec.ingress ?? []).map((r) => ({ ports: r.ports, peers: r.from })),
            'spec.ingress',
            'ingress',
          ),
        }
      : {}),
    ...(types.includes('Egress')
      ? {
          egress: rules(
            (spec.egress ?? []).map((r) => ({ ports: r.ports, peers: r.to })),
            'spec.egress',
            'egress',
          ),
        }
      : {}),
  };
}

/** A peer as one side of a rule: an ipBlock's nets, or the pods its selectors pick. */
function peerSide(peer: NetworkPolicyPeer, namespace: string, field: string): ParsedRuleSide {
  if (peer.ipBlock) {
    const except = (peer.ipBlock.except ?? []).map((c, i) => canonicalNet(c, `${field}.ipBlock.except[${i}]`));
    return { nets: [canonicalNet(peer.ipBlock.cidr, `${field}.ipBlock.cidr`)], ...(except.length ? { notNets: except } : {}) };
  }
  let selection: EndpointSelection;
  if (peer.namespaceSelector) {
    const namespaces = namespaceScope(labelSelectorText(peer.namespaceSelector), `${field}.namespaceSelector`);
    selection = { selector: labelSelectorText(peer.podSelector ?? {}), namespaces };
  } else {
    selection = { selector: labelSelectorText(peer.podSelector ?? {}), namespaces: { kind: 'name', name: namespace } };
  }
  return { selection };
}

/**
 * A rule's ports as alternatives per protocol: all ports of a protocol when an entry names
 * none, else its numbers, ranges and names. No ports at all: one group, any protocol.
 */
function portGroups(ports: readonly NetworkPolicyPort[] | undefined, field: string): { protocol?: Protocol; ports?: PortMatch[] }[] {
  if (!ports?.length) return [{}];
  const groups = new Map<Protocol, PortMatch[] | undefined>();
  for (const [i, p] of ports.entries()) {
    const protocol = toProtocol(p.protocol ?? 'TCP', `${field}.ports[${i}].protocol`);
    if (p.port === undefined) {
      groups.set(protocol, undefined);
      continue;
    }
    if (groups.has(protocol) && groups.get(protocol) === undefined) continue;
    const list = groups.get(protocol) ?? [];
    list.push(typeof p.port === 'string' ? { name: p.port } : { first: p.port, last: p.endPort ?? p.port });
    groups.set(protocol, list);
  }
  return [...groups].map(([protocol, list]) => (list ? { protocol, ports: list } : { protocol }));
}

function parseRule(
  peers: readonly NetworkPolicyPeer[] | undefined,
  ports: readonly NetworkPolicyPort[] | undefined,
  namespace: string,
  field: string,
  direction: 'ingress' | 'egress',
): ParsedRule[] {
  const peerField = direction === 'ingress' ? 'from' : 'to';
  const sides = peers?.length
    ? peers.map((peer, i) => ({ origin: `${field}.${peerField}[${i}]`, side: peerSide(peer, namespace, `${field}.${peerField}[${i}]`) }))
    : [{ origin: field, side: {} }];
  const out: ParsedRule[] = [];
  for (const { origin, side } of sides) {
    for (const g of portGroups(ports, field)) {
      const dstPorts: ParsedRuleSide = g.ports ? { ports: g.ports } : {};
      out.push({
        origin,
        action: 'Allow',
        ...(g.protocol !== undefined ? { protocol: g.protocol } : {}),
        source: direction === 'ingress' ? side : {},
        destination: direction === 'ingress' ? dstPorts : { ...side, ...dstPorts },
      });
    }
  }
  return out;
}
