// AdminNetworkPolicy and BaselineAdminNetworkPolicy checked as the API server checks them from
// the network-policy-api CRDs (v1alpha1, the experimental channel's fields): required fields,
// enums, list sizes, the priority range, one field per union, the BANP's one name; unknown
// fields refused. Egress peers `nodes` and `domainNames` are refused by name: a podroute
// cluster has no host endpoints and no DNS-aware dataplane.
import type { Checker, Obj } from './checker.js';
import type {
  AdminNetworkPolicyEgressPeer,
  AdminNetworkPolicyEgressRule,
  AdminNetworkPolicyIngressPeer,
  AdminNetworkPolicyIngressRule,
  AdminNetworkPolicyPort,
  AdminNetworkPolicySpec,
  AdminNetworkPolicySubject,
  BaselineAdminNetworkPolicySpec,
  NamespacedPod,
} from './admin-policy-types.js';
import { checkLabelSelector, KUBERNETES_PROTOCOLS, portNameProblem } from './validate-kubernetes.js';

const MAX_RULES = 100;
const MAX_PEERS = 100;
const MAX_PORTS = 100;
const MAX_NETWORKS = 25;
const MAX_RULE_NAME = 100;
/** The CRD's maxLength of one CIDR. */
const MAX_CIDR = 43;

const UNSUPPORTED_EGRESS: Readonly<Record<string, string>> = {
  nodes: 'is not supported: podroute has no host endpoints for a policy to reach nodes by label (give their addresses in networks)',
  domainNames: 'is not supported: podroute does not match traffic by DNS name',
};

/** The one field a union object sets, from `fields`; none or two are refused (the CRD's min/maxProperties 1). */
function oneOf(c: Checker, o: Obj, fields: readonly string[], path: string): string {
  const set = fields.filter((k) => o[k] !== undefined && o[k] !== null);
  if (set.length === 0) c.fail(path, `must set exactly one of ${fields.join(', ')}`);
  if (set.length > 1) c.fail(path, `must set exactly one of ${fields.join(', ')}, not ${set.join(' and ')}`);
  return set[0]!;
}

function sizedList(
  c: Checker,
  o: Obj,
  k: string,
  path: string,
  what: string,
  min: number,
  max: number,
  required: boolean,
): unknown[] | undefined {
  const list = c.list(o, k, path, what);
  if (list === undefined) {
    if (required) c.fail(`${path}.${k}`, 'is required');
    return undefined;
  }
  if (list.length < min) c.fail(`${path}.${k}`, `must hold at least ${min} item${min === 1 ? '' : 's'}`);
  if (list.length > max) c.fail(`${path}.${k}`, `may hold at most ${max} items, not ${list.length}`);
  return list;
}

function namespacedPod(c: Checker, v: unknown, path: string): NamespacedPod {
  const o = c.obj(v, path);
  c.only(o, ['namespaceSelector', 'podSelector'], path);
  for (const k of ['namespaceSelector', 'podSelector'])
    if (o[k] === undefined || o[k] === null) c.fail(`${path}.${k}`, 'is required ({} selects every one)');
  return {
    namespaceSelector: checkLabelSelector(c, o.namespaceSelector, `${path}.namespaceSelector`),
    podSelector: checkLabelSelector(c, o.podSelector, `${path}.podSelector`),
  };
}

function subject(c: Checker, s: Obj): AdminNetworkPolicySubject {
  if (s.subject === undefined || s.subject === null) c.fail('spec.subject', 'is required');
  const o = c.obj(s.subject, 'spec.subject');
  c.only(o, ['namespaces', 'pods'], 'spec.subject');
  const which = oneOf(c, o, ['namespaces', 'pods'], 'spec.subject');
  return which === 'namespaces'
    ? { namespaces: checkLabelSelector(c, o.namespaces, 'spec.subject.namespaces') }
    : { pods: namespacedPod(c, o.pods, 'spec.subject.pods') };
}

function peer(c: Checker, v: unknown, path: string, egress: boolean): AdminNetworkPolicyEgressPeer {
  const o = c.obj(v, path);
  const fields = egress ? ['namespaces', 'pods', 'networks'] : ['namespaces', 'pods'];
  c.only(o, fields, path, egress ? UNSUPPORTED_EGRESS : {});
  const which = oneOf(c, o, fields, path);
  if (which === 'namespaces') return { namespaces: checkLabelSelector(c, o.namespaces, `${path}.namespaces`) };
  if (which === 'pods') return { pods: namespacedPod(c, o.pods, `${path}.pods`) };
  const nets = sizedList(c, o, 'networks', path, 'a list of CIDRs', 1, MAX_NETWORKS, true)!;
  return {
    networks: nets.map((n, i) => {
      const f = `${path}.networks[${i}]`;
      if (typeof n === 'string' && n.length > MAX_CIDR) c.fail(f, `may be at most ${MAX_CIDR} characters`);
      // The CRD's isCIDR(): a prefix length is required, host bits are allowed.
      c.cidr(n, f, false);
      if (nets.indexOf(n) !== i) c.fail(f, `${String(n)} is listed twice (networks is a set)`);
      return n as string;
    }),
  };
}

function port(c: Checker, v: unknown, path: string): AdminNetworkPolicyPort {
  const o = c.obj(v, path);
  const fields = ['portNumber', 'namedPort', 'portRange'];
  c.only(o, fields, path);
  const which = oneOf(c, o, fields, path);
  if (which === 'namedPort') {
    if (typeof o.namedPort !== 'string') c.fail(`${path}.namedPort`, `must be a string, not ${JSON.stringify(o.namedPort)}`);
    const why = portNameProblem(o.namedPort);
    if (why) c.fail(`${path}.namedPort`, `${JSON.stringify(o.namedPort)} is not a port name: it ${why}`);
    return { namedPort: o.namedPort };
  }
  const p = `${path}.${which}`;
  const m = c.obj(o[which], p);
  const protocol = () => c.oneOf(m, 'protocol', p, KUBERNETES_PROTOCOLS, 'TCP');
  if (which === 'portNumber') {
    c.only(m, ['protocol', 'port'], p);
    return { portNumber: { protocol: protocol(), port: c.int(m, 'port', p, 1, 65535, true)! } };
  }
  c.only(m, ['protocol', 'start', 'end'], p);
  const start = c.int(m, 'start', p, 1, 65535, true)!;
  const end = c.int(m, 'end', p, 1, 65535, true)!;
  // The API's own words: the end of a range must be greater than its start.
  if (end <= start) c.fail(`${p}.end`, `${end} must be greater than start ${start}`);
  return { portRange: { protocol: protocol(), start, end } };
}

function rules<A extends string>(
  c: Checker,
  s: Obj,
  dir: 'ingress' | 'egress',
  actions: readonly A[],
): (AdminNetworkPolicyIngressRule<A> | AdminNetworkPolicyEgressRule<A>)[] | undefined {
  const peers = dir === 'ingress' ? 'from' : 'to';
  const list = sizedList(c, s, dir, 'spec', `a list of {name, action, ${peers}, ports}`, 0, MAX_RULES, false);
  return list?.map((r, i) => {
    const p = `spec.${dir}[${i}]`;
    const m = c.obj(r, p);
    c.only(m, ['name', 'action', peers, 'ports'], p);
    const name = c.str(m, 'name', p);
    if (name !== undefined && name.length > MAX_RULE_NAME) c.fail(`${p}.name`, `may be at most ${MAX_RULE_NAME} characters`);
    if (m.action === undefined || m.action === null) c.fail(`${p}.action`, `is required (one of ${actions.join(', ')})`);
    const action = c.oneOf(m, 'action', p, actions, actions[0]!);
    const from = sizedList(c, m, peers, p, 'a list of peers', 1, MAX_PEERS, true)!.map((x, j) =>
      peer(c, x, `${p}.${peers}[${j}]`, dir === 'egress'),
    );
    const ports = sizedList(c, m, 'ports', p, 'a list of {portNumber | namedPort | portRange}', 1, MAX_PORTS, false)?.map((x, j) =>
      port(c, x, `${p}.ports[${j}]`),
    );
    // The CRD: networks name no pod, so no named port can be looked up on them.
    if (ports?.some((x) => x.namedPort !== undefined) && from.some((x) => x.networks !== undefined))
      c.fail(`${p}.ports`, 'a namedPort cannot be used with a networks peer: only pods have named ports');
    return {
      ...(name !== undefined ? { name } : {}),
      action,
      ...(dir === 'ingress' ? { from: from as AdminNetworkPolicyIngressPeer[] } : { to: from }),
      ...(ports ? { ports } : {}),
    } as AdminNetworkPolicyIngressRule<A> | AdminNetworkPolicyEgressRule<A>;
  });
}

export function checkAdminNetworkPolicy(c: Checker, s: Obj): AdminNetworkPolicySpec {
  c.only(s, ['priority', 'subject', 'ingress', 'egress'], 'spec');
  const priority = c.int(s, 'priority', 'spec', 0, 1000, true)!;
  const out: AdminNetworkPolicySpec = { priority, subject: subject(c, s) };
  const ingress = rules(c, s, 'ingress', ['Allow', 'Deny', 'Pass'] as const);
  const egress = rules(c, s, 'egress', ['Allow', 'Deny', 'Pass'] as const);
  if (ingress) out.ingress = ingress as AdminNetworkPolicyIngressRule[];
  if (egress) out.egress = egress as AdminNetworkPolicyEgressRule[];
  return out;
}

export function checkBaselineAdminNetworkPolicy(c: Checker, s: Obj, name: string): BaselineAdminNetworkPolicySpec {
  if (name !== 'default')
    c.fail('metadata.name', `must be "default", not ${JSON.stringify(name)}: a cluster has one BaselineAdminNetworkPolicy`);
  c.only(s, ['subject', 'ingress', 'egress'], 'spec');
  const out: BaselineAdminNetworkPolicySpec = { subject: subject(c, s) };
  const ingress = rules(c, s, 'ingress', ['Allow', 'Deny'] as const);
  const egress = rules(c, s, 'egress', ['Allow', 'Deny'] as const);
  if (ingress) out.ingress = ingress as BaselineAdminNetworkPolicySpec['ingress'];
  if (egress) out.egress = egress as BaselineAdminNetworkPolicySpec['egress'];
  return out;
}
