// Calico NetworkPolicy and GlobalNetworkPolicy → parsed policies of their tier (`spec.tier`, else default). A
// namespaced policy selects endpoints of its own namespace, and so do its rules' selectors
// unless the rule gives a namespaceSelector; a global one looks in every namespace (or in those
// its namespaceSelector picks). A namespaceSelector alone means every endpoint of those
// namespaces; a notSelector is scoped the same way as a selector, as Calico does.
import type { CalicoNetworkPolicy, CalicoPort, CalicoRule, EntityRule, GlobalNetworkPolicy, PolicyType } from '../resources/index.js';
import {
  DEFAULT_TIER,
  type EndpointSelection,
  type NamespaceScope,
  type ParsedPolicy,
  type ParsedRule,
  type ParsedRuleSide,
  PolicyConversionError,
  policyTieKey,
  type PortMatch,
} from './model.js';
import { toProtocol } from './protocol.js';
import { canonicalNet, namespaceScope, selectorText } from './selectors.js';

export function calicoPolicyId(namespace: string, name: string): string {
  return `np.${namespace}.${name}`;
}

export function globalPolicyId(name: string): string {
  return `gnp.${name}`;
}

/** Calico's rule when types is omitted: both when both kinds of rule are present, Egress when only egress rules are, else Ingress. */
export function calicoPolicyTypes(spec: CalicoNetworkPolicy['spec']): PolicyType[] {
  if (spec.types?.length) return spec.types;
  const ingress = (spec.ingress?.length ?? 0) > 0;
  const egress = (spec.egress?.length ?? 0) > 0;
  if (ingress && egress) return ['Ingress', 'Egress'];
  return egress ? ['Egress'] : ['Ingress'];
}

export function parseCalicoPolicy(p: CalicoNetworkPolicy): ParsedPolicy {
  const namespace = p.metadata.namespace ?? 'default';
  return parse(
    p.spec,
    p.metadata.name,
    { kind: 'name', name: namespace },
    {
      id: calicoPolicyId(namespace, p.metadata.name),
      kind: 'NetworkPolicy',
      namespace,
    },
  );
}

export function parseGlobalPolicy(p: GlobalNetworkPolicy): ParsedPolicy {
  const scope: NamespaceScope =
    p.spec.namespaceSelector !== undefined ? namespaceScope(p.spec.namespaceSelector, 'spec.namespaceSelector') : { kind: 'all' };
  return parse(p.spec, p.metadata.name, scope, { id: globalPolicyId(p.metadata.name), kind: 'GlobalNetworkPolicy' }, { kind: 'all' });
}

function parse(
  spec: CalicoNetworkPolicy['spec'],
  name: string,
  selected: NamespaceScope,
  head: Pick<ParsedPolicy, 'id' | 'kind' | 'namespace'>,
  ruleScope: NamespaceScope = selected,
): ParsedPolicy {
  const types = calicoPolicyTypes(spec);
  const rules = (list: readonly CalicoRule[] | undefined, field: string) =>
    (list ?? []).map((r, i) => parseRule(r, ruleScope, `${field}[${i}]`));
  return {
    ...head,
    name,
    tier: spec.tier ?? DEFAULT_TIER,
    sortKey: policyTieKey(name, head.namespace, head.kind),
    ...(spec.order !== undefined ? { order: spec.order } : {}),
    selection: { selector: selectorText(spec.selector, 'spec.selector'), namespaces: selected },
    ...(types.includes('Ingress') ? { ingress: rules(spec.ingress, 'spec.ingress') } : {}),
    ...(types.includes('Egress') ? { egress: rules(spec.egress, 'spec.egress') } : {}),
  };
}

function parseRule(r: CalicoRule, scope: NamespaceScope, field: string): ParsedRule {
  const icmp = r.icmp?.type !== undefined ? { type: r.icmp.type, ...(r.icmp.code !== undefined ? { code: r.icmp.code } : {}) } : undefined;
  const notIcmp =
    r.notICMP?.type !== undefined ? { type: r.notICMP.type, ...(r.notICMP.code !== undefined ? { code: r.notICMP.code } : {}) } : undefined;
  return {
    origin: field,
    action: r.action,
    ...(r.ipVersion !== undefined ? { ipVersion: r.ipVersion } : {}),
    ...(r.protocol !== undefined ? { protocol: toProtocol(r.protocol, `${field}.protocol`) } : {}),
    ...(r.notProtocol !== undefined ? { notProtocol: toProtocol(r.notProtocol, `${field}.notProtocol`) } : {}),
    ...(icmp ? { icmp } : {}),
    ...(notIcmp ? { notIcmp } : {}),
    source: parseSide(r.source, scope, `${field}.source`),
    destination: parseSide(r.destination, scope, `${field}.destination`),
  };
}

function parseSide(e: EntityRule | undefined, policyScope: NamespaceScope, field: string): ParsedRuleSide {
  if (!e) return {};
  const scope = e.namespaceSelector !== undefined ? namespaceScope(e.namespaceSelector, `${field}.namespaceSelector`) : policyScope;
  const at = (s: string | undefined, f: string): EndpointSelection | undefined =>
    s === undefined ? undefined : { selector: selectorText(s, f), namespaces: scope };
  const selection =
    at(e.selector, `${field}.selector`) ?? (e.namespaceSelector !== undefined ? at('all()', `${field}.namespaceSelector`) : undefined);
  const notSelection = at(e.notSelector, `${field}.notSelector`);
  const nets = e.nets?.map((n, i) => canonicalNet(n, `${field}.nets[${i}]`));
  const notNets = e.notNets?.map((n, i) => canonicalNet(n, `${field}.notNets[${i}]`));
  const ports = e.ports?.map((p, i) => parsePort(p, `${field}.ports[${i}]`));
  const notPorts = e.notPorts?.map((p, i) => parsePort(p, `${field}.notPorts[${i}]`));
  return {
    ...(nets?.length ? { nets } : {}),
    ...(notNets?.length ? { notNets } : {}),
    ...(selection ? { selection } : {}),
    ...(notSelection ? { notSelection } : {}),
    ...(ports?.length ? { ports } : {}),
    ...(notPorts?.length ? { notPorts } : {}),
  };
}

/** 80, "80", "8000:8080", or a port's name. */
function parsePort(p: CalicoPort, field: string): PortMatch {
  if (typeof p === 'number') return { first: p, last: p };
  const range = /^(\d+)(?::(\d+))?$/.exec(p);
  if (!range) {
    if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/i.test(p))
      throw new PolicyConversionError(field, `'${p}' is neither a port, a range first:last, nor a port name`);
    return { name: p };
  }
  const first = Number(range[1]);
  const last = range[2] === undefined ? first : Number(range[2]);
  if (first > 65535 || last > 65535 || first > last) throw new PolicyConversionError(field, `'${p}' is not a port range within 0..65535`);
  return { first, last };
}
