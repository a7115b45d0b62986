// Kubernetes' networking.k8s.io/v1 NetworkPolicy, checked by the rules the API server applies
// (peers, ipBlock, ports, endPort, policyTypes and its default) and with unknown fields
// refused; and the LabelSelector shape it shares with the rest of Kubernetes.
import { cidrContains, type Cidr } from '../../ip/index.js';
import type { Checker, Obj } from './checker.js';
import type {
  IPBlock,
  KubernetesNetworkPolicySpec,
  KubernetesProtocol,
  LabelSelector,
  LabelSelectorRequirement,
  NetworkPolicyPeer,
  NetworkPolicyPort,
  PolicyType,
} from './policy-types.js';

const OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;
export const KUBERNETES_PROTOCOLS: readonly KubernetesProtocol[] = ['TCP', 'UDP', 'SCTP'];
const POLICY_TYPES: readonly PolicyType[] = ['Ingress', 'Egress'];

/** IANA_SVC_NAME, what Kubernetes allows as a port name: 1-15 of a-z, 0-9 and '-', one letter at least. */
export function portNameProblem(name: string): string | undefined {
  if (name.length > 15) return 'is longer than 15 characters';
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(name))
    return "must be lower-case letters, digits and '-', starting and ending with a letter or digit";
  if (name.includes('--')) return "must not contain '--'";
  if (!/[a-z]/.test(name)) return 'must contain at least one letter';
  return undefined;
}

export function checkLabelSelector(c: Checker, v: unknown, path: string): LabelSelector {
  const o = c.obj(v, path);
  c.only(o, ['matchLabels', 'matchExpressions'], path);
  const out: LabelSelector = {};
  const labels = c.strictLabels(o, 'matchLabels', path);
  if (labels) out.matchLabels = labels;
  const exprs = c.list(o, 'matchExpressions', path, 'a list of {key, operator, values}');
  if (exprs) {
    out.matchExpressions = exprs.map((e, i): LabelSelectorRequirement => {
      const p = `${path}.matchExpressions[${i}]`;
      const m = c.obj(e, p);
      c.only(m, ['key', 'operator', 'values'], p);
      const key = c.labelKey(m.key, `${p}.key`);
      if (m.operator === undefined || m.operator === null) c.fail(`${p}.operator`, 'is required');
      const operator = c.oneOf(m, 'operator', p, OPERATORS, 'In');
      const values = c.list(m, 'values', p, 'a list of label values') ?? [];
      const req: LabelSelectorRequirement = { key, operator };
      if (operator === 'In' || operator === 'NotIn') {
        if (values.length === 0) c.fail(`${p}.values`, `must be non-empty when operator is ${operator}`);
        req.values = values.map((x, j) => c.labelValue(x, `${p}.values[${j}]`));
      } else if (values.length > 0) c.fail(`${p}.values`, `must be empty when operator is ${operator}`);
      return req;
    });
  }
  return out;
}

function checkIpBlock(c: Checker, v: unknown, path: string): IPBlock {
  const o = c.obj(v, path);
  c.only(o, ['cidr', 'except'], path);
  const cidr = c.str(o, 'cidr', path, true)!;
  // Kubernetes accepts host bits here (10.0.0.1/24 stands for 10.0.0.0/24).
  const net: Cidr = c.cidr(cidr, `${path}.cidr`, false);
  const out: IPBlock = { cidr };
  const except = c.list(o, 'except', path, 'a list of CIDRs');
  if (except) {
    out.except = except.map((x, i) => {
      const f = `${path}.except[${i}]`;
      const e = c.cidr(x, f, false);
      if (e.family !== net.family || e.prefixLength <= net.prefixLength || !cidrContains(net, e))
        c.fail(f, `${String(x)} must be a strict subset of cidr ${cidr}`);
      return x as string;
    });
  }
  return out;
}

function checkPeer(c: Checker, v: unknown, path: string): NetworkPolicyPeer {
  const o = c.obj(v, path);
  c.only(o, ['podSelector', 'namespaceSelector', 'ipBlock'], path);
  const out: NetworkPolicyPeer = {};
  const present = (k: string): boolean => o[k] !== undefined && o[k] !== null;
  if (present('podSelector')) out.podSelector = checkLabelSelector(c, o.podSelector, `${path}.podSelector`);
  if (present('namespaceSelector')) out.namespaceSelector = checkLabelSelector(c, o.namespaceSelector, `${path}.namespaceSelector`);
  if (present('ipBlock')) {
    if (out.podSelector || out.namespaceSelector)
      c.fail(`${path}.ipBlock`, 'may not be given with podSelector or namespaceSelector in one peer');
    out.ipBlock = checkIpBlock(c, o.ipBlock, `${path}.ipBlock`);
  }
  if (!out.podSelector && !out.namespaceSelector && !out.ipBlock)
    c.fail(path, 'must specify a peer: podSelector, namespaceSelector or ipBlock');
  return out;
}

function checkPort(c: Checker, v: unknown, path: string): NetworkPolicyPort {
  const o = c.obj(v, path);
  c.only(o, ['protocol', 'port', 'endPort'], path);
  const out: NetworkPolicyPort = { protocol: c.oneOf(o, 'protocol', path, KUBERNETES_PROTOCOLS, 'TCP') };
  const port = o.port;
  if (port !== undefined && port !== null) {
    if (typeof port === 'string') {
      const why = portNameProblem(port);
      if (why) c.fail(`${path}.port`, `${JSON.stringify(port)} is not a port name: it ${why}`);
    } else c.num(port, `${path}.port`, 1, 65535);
    out.port = port as number | string;
  }
  if (o.endPort !== undefined && o.endPort !== null) {
    if (out.port === undefined) c.fail(`${path}.endPort`, 'may not be given without port');
    if (typeof out.port === 'string') c.fail(`${path}.endPort`, 'may not be given with a named port');
    const end = c.num(o.endPort, `${path}.endPort`, 1, 65535);
    if (end < (out.port as number)) c.fail(`${path}.endPort`, `${end} must be greater than or equal to port ${out.port}`);
    out.endPort = end;
  }
  return out;
}

function checkRules<R>(c: Checker, s: Obj, dir: 'ingress' | 'egress', path: string): R[] | undefined {
  const peers = dir === 'ingress' ? 'from' : 'to';
  const rules = c.list(s, dir, path, `a list of {ports, ${peers}}`);
  return rules?.map((r, i) => {
    const p = `${path}.${dir}[${i}]`;
    const m = c.obj(r, p);
    c.only(m, ['ports', peers], p);
    const out: Obj = {};
    const ports = c.list(m, 'ports', p, 'a list of {protocol, port, endPort}');
    if (ports) out.ports = ports.map((x, j) => checkPort(c, x, `${p}.ports[${j}]`));
    const list = c.list(m, peers, p, 'a list of peers');
    if (list) out[peers] = list.map((x, j) => checkPeer(c, x, `${p}.${peers}[${j}]`));
    return out as R;
  });
}

export function checkKubernetesNetworkPolicy(c: Checker, s: Obj): KubernetesNetworkPolicySpec {
  c.only(s, ['podSelector', 'policyTypes', 'ingress', 'egress'], 'spec');
  const podSelector = s.podSelector === undefined || s.podSelector === null ? {} : checkLabelSelector(c, s.podSelector, 'spec.podSelector');
  const ingress = checkRules<NonNullable<KubernetesNetworkPolicySpec['ingress']>[number]>(c, s, 'ingress', 'spec');
  const egress = checkRules<NonNullable<KubernetesNetworkPolicySpec['egress']>[number]>(c, s, 'egress', 'spec');
  const given = c.list(s, 'policyTypes', 'spec', 'a list of Ingress and Egress');
  let policyTypes: PolicyType[];
  if (given) {
    if (given.length > 2) c.fail('spec.policyTypes', 'may not hold more than two policy types');
    policyTypes = given.map((t, i) => {
      if (!POLICY_TYPES.includes(t as PolicyType)) c.fail(`spec.policyTypes[${i}]`, `must be Ingress or Egress, not ${JSON.stringify(t)}`);
      if (given.indexOf(t) !== i) c.fail(`spec.policyTypes[${i}]`, `${String(t)} is listed twice`);
      return t as PolicyType;
    });
  } else {
    // The API server's default: always Ingress, Egress too when there are egress rules.
    policyTypes = egress && egress.length > 0 ? ['Ingress', 'Egress'] : ['Ingress'];
  }
  const out: KubernetesNetworkPolicySpec = { podSelector, policyTypes };
  if (ingress) out.ingress = ingress;
  if (egress) out.egress = egress;
  return out;
}
