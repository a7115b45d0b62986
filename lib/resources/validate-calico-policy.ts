// Calico's projectcalico.org/v3 NetworkPolicy and GlobalNetworkPolicy, checked as calicoctl
// checks them (actions, protocols and the ports and ICMP fields they allow, nets of one family
// matching ipVersion, selectors, global() only in a namespaceSelector, the tier),
// with unknown fields refused and the fields podroute does not implement refused by name.
import type { Checker, Obj } from './checker.js';
import type {
  CalicoAction,
  CalicoNetworkPolicySpec,
  CalicoPort,
  CalicoProtocol,
  CalicoRule,
  EntityRule,
  GlobalNetworkPolicySpec,
  ICMPFields,
  PolicyType,
} from './policy-types.js';
import { parseSelectorAst, selectorUsesGlobal } from './selector.js';
import { portNameProblem } from './validate-kubernetes.js';
import { tierNameProblem } from './validate-tier.js';

const ACTIONS: readonly CalicoAction[] = ['Allow', 'Deny', 'Pass', 'Log'];
const PROTOCOL_NAMES: readonly Exclude<CalicoProtocol, number>[] = ['TCP', 'UDP', 'ICMP', 'ICMPv6', 'SCTP', 'UDPLite'];
/** Protocols whose ports podroute matches (by name or number). */
const PORT_PROTOCOLS: readonly CalicoProtocol[] = ['TCP', 'UDP', 'SCTP', 6, 17, 132];
const ICMP_PROTOCOLS: readonly CalicoProtocol[] = ['ICMP', 'ICMPv6', 1, 58];

const NOT_SUPPORTED = 'is not supported by podroute';
const POLICY_UNSUPPORTED: Readonly<Record<string, string>> = {
  serviceAccountSelector: `${NOT_SUPPORTED} (select endpoints by their labels)`,
  doNotTrack: NOT_SUPPORTED,
  preDNAT: NOT_SUPPORTED,
  applyOnForward: NOT_SUPPORTED,
  performanceHints: NOT_SUPPORTED,
};
const RULE_UNSUPPORTED: Readonly<Record<string, string>> = { http: `${NOT_SUPPORTED} (application layer policy)` };
const ENTITY_UNSUPPORTED: Readonly<Record<string, string>> = {
  serviceAccounts: `${NOT_SUPPORTED}: podroute has no service accounts; select the pods by their labels instead`,
  services: `${NOT_SUPPORTED}: match the service's pods by selector, or its addresses by nets`,
};

function protocol(c: Checker, v: unknown, field: string): CalicoProtocol {
  if (typeof v === 'number') return c.num(v, field, 1, 255);
  if (typeof v === 'string') {
    if (/^\d+$/.test(v)) return c.num(Number(v), field, 1, 255);
    // Calico spells them TCP, ICMPv6...; a lower-case name is read as the same protocol.
    const name = PROTOCOL_NAMES.find((p) => p.toLowerCase() === v.toLowerCase());
    if (name) return name;
  }
  return c.fail(field, `must be one of ${PROTOCOL_NAMES.join(', ')} or a protocol number 1-255, not ${JSON.stringify(v)}`);
}

function icmpFields(c: Checker, v: unknown, field: string): ICMPFields {
  const o = c.obj(v, field);
  c.only(o, ['type', 'code'], field);
  const out: ICMPFields = {};
  if (o.type !== undefined && o.type !== null) out.type = c.num(o.type, `${field}.type`, 0, 254);
  if (o.code !== undefined && o.code !== null) {
    if (out.type === undefined) c.fail(`${field}.code`, 'may not be given without type');
    out.code = c.num(o.code, `${field}.code`, 0, 255);
  }
  return out;
}

/** A port: a number, "first:last", or a named port. */
function port(c: Checker, v: unknown, field: string): CalicoPort {
  if (typeof v === 'number') return c.num(v, field, 0, 65535);
  if (typeof v !== 'string' || v === '')
    return c.fail(field, `must be a port number, a range "first:last" or a port name, not ${JSON.stringify(v)}`);
  const range = /^(\d+):(\d+)$/.exec(v);
  if (range) {
    const first = c.num(Number(range[1]), field, 0, 65535);
    const last = c.num(Number(range[2]), field, 0, 65535);
    if (first > last) c.fail(field, `range ${v}: the first port is greater than the last`);
    return v;
  }
  if (/^\d+$/.test(v)) return c.num(Number(v), field, 0, 65535);
  const why = portNameProblem(v);
  if (why) c.fail(field, `${JSON.stringify(v)} is not a port name: it ${why}`);
  return v;
}

const isNamed = (p: CalicoPort): boolean => typeof p === 'string' && !/^\d+(:\d+)?$/.test(p);

/** Nets are strictly masked CIDRs or bare addresses (a host), as Calico's `net` check. */
function nets(c: Checker, o: Obj, k: string, path: string): { list: string[]; families: Set<4 | 6> } | undefined {
  const v = c.list(o, k, path, 'a list of CIDRs');
  if (!v) return undefined;
  const families = new Set<4 | 6>();
  const list = v.map((n, i) => {
    const f = `${path}.${k}[${i}]`;
    const text = typeof n === 'string' && !n.includes('/') ? `${n}/${c.ip(n, f) === 4 ? 32 : 128}` : n;
    const net = c.cidr(text, f);
    if (k === 'notNets' && net.prefixLength === 0) c.fail(f, `${String(n)} matches every address, so the rule could never match`);
    families.add(net.family);
    return n as string;
  });
  return { list, families };
}

function selector(c: Checker, o: Obj, k: string, path: string, allowGlobal: boolean): string | undefined {
  const s = c.selector(o, k, path, { allowGlobal });
  // global() stands alone, as Calico requires: it names the non-namespaced endpoints.
  if (s !== undefined && allowGlobal) {
    const tree = parseSelectorAst(s, { allowGlobal });
    if (tree.op !== 'global' && selectorUsesGlobal(tree)) c.fail(`${path}.${k}`, 'global() cannot be combined with other selectors');
  }
  return s;
}

function entity(c: Checker, v: unknown, path: string, families: Set<4 | 6>): EntityRule {
  const o = c.obj(v, path);
  c.only(o, ['nets', 'notNets', 'selector', 'notSelector', 'namespaceSelector', 'ports', 'notPorts'], path, ENTITY_UNSUPPORTED);
  const out: EntityRule = {};
  for (const k of ['nets', 'notNets'] as const) {
    const n = nets(c, o, k, path);
    if (!n) continue;
    out[k] = n.list;
    for (const f of n.families) families.add(f);
    if (families.size > 1) c.fail(`${path}.${k}`, 'a rule may not mix IPv4 and IPv6 CIDRs');
  }
  for (const k of ['selector', 'notSelector'] as const) {
    const s = selector(c, o, k, path, false);
    if (s !== undefined) out[k] = s;
  }
  const ns = selector(c, o, 'namespaceSelector', path, true);
  if (ns !== undefined) out.namespaceSelector = ns;
  for (const k of ['ports', 'notPorts'] as const) {
    const list = c.list(o, k, path, 'a list of ports');
    if (list) out[k] = list.map((p, i) => port(c, p, `${path}.${k}[${i}]`));
  }
  return out;
}

function rule(c: Checker, v: unknown, path: string): CalicoRule {
  const o = c.obj(v, path);
  c.only(
    o,
    ['action', 'ipVersion', 'protocol', 'notProtocol', 'icmp', 'notICMP', 'source', 'destination', 'metadata'],
    path,
    RULE_UNSUPPORTED,
  );
  if (o.action === undefined || o.action === null) c.fail(`${path}.action`, `is required (${ACTIONS.join(', ')})`);
  const out: CalicoRule = { action: c.oneOf(o, 'action', path, ACTIONS, 'Allow') };
  if (o.ipVersion !== undefined && o.ipVersion !== null) {
    if (o.ipVersion !== 4 && o.ipVersion !== 6) c.fail(`${path}.ipVersion`, `must be 4 or 6, not ${JSON.stringify(o.ipVersion)}`);
    out.ipVersion = o.ipVersion;
  }
  if (o.protocol !== undefined && o.protocol !== null) out.protocol = protocol(c, o.protocol, `${path}.protocol`);
  if (o.notProtocol !== undefined && o.notProtocol !== null) out.notProtocol = protocol(c, o.notProtocol, `${path}.notProtocol`);
  for (const k of ['icmp', 'notICMP'] as const) {
    if (o[k] === undefined || o[k] === null) continue;
    if (out.protocol === undefined || !ICMP_PROTOCOLS.includes(out.protocol))
      c.fail(`${path}.${k}`, 'rules that give ICMP fields must set protocol to ICMP or ICMPv6');
    out[k] = icmpFields(c, o[k], `${path}.${k}`);
  }
  const v6 = out.protocol === 'ICMPv6' || out.protocol === 58;
  const v4 = out.protocol === 'ICMP' || out.protocol === 1;
  if (out.ipVersion === 4 && v6) c.fail(`${path}.ipVersion`, 'is 4, but the protocol is ICMPv6');
  if (out.ipVersion === 6 && v4) c.fail(`${path}.ipVersion`, 'is 6, but the protocol is ICMP (use ICMPv6)');
  const families = new Set<4 | 6>();
  for (const side of ['source', 'destination'] as const) {
    if (o[side] === undefined || o[side] === null) continue;
    const e = entity(c, o[side], `${path}.${side}`, families);
    if (out.ipVersion !== undefined && families.size > 0 && !families.has(out.ipVersion))
      c.fail(`${path}.${side}`, `its nets are not IPv${out.ipVersion}, the rule's ipVersion`);
    for (const k of ['ports', 'notPorts'] as const) {
      const ports = e[k];
      if (!ports || ports.length === 0) continue;
      const f = `${path}.${side}.${k}`;
      if (out.protocol === undefined) {
        // Calico: without a protocol only named ports (which carry their own protocol) are allowed.
        if (!ports.every(isNamed)) c.fail(f, 'rules that give port numbers must set protocol to TCP, UDP or SCTP');
      } else if (!PORT_PROTOCOLS.includes(out.protocol))
        c.fail(f, `rules that give ports must set protocol to TCP, UDP or SCTP, not ${out.protocol}`);
      // Named ports are looked up on the destination endpoint; podroute matches them nowhere else.
      if ((side === 'source' || k === 'notPorts') && ports.some(isNamed))
        c.fail(f, 'named ports are not supported here by podroute, only in destination.ports');
    }
    out[side] = e;
  }
  if (o.metadata !== undefined && o.metadata !== null) {
    const m = c.obj(o.metadata, `${path}.metadata`);
    c.only(m, ['annotations'], `${path}.metadata`);
    const a = c.optObj(m, 'annotations', `${path}.metadata`);
    out.metadata = a ? { annotations: a as Record<string, string> } : {};
  }
  return out;
}

/**
 * The tier named by `spec.tier`, when given. A policy's name need not carry its tier: Calico
 * required `<tier>.<name>` from 3.29 and dropped the rule in 3.31 (a policy is its kind,
 * namespace and name), so both `security.allow-web` and `allow-web` in tier `security` are taken.
 */
export function policyTier(c: Checker, s: Obj): string | undefined {
  const given = c.str(s, 'tier', 'spec');
  if (given !== undefined && given !== '') {
    const bad = tierNameProblem(given);
    if (bad) c.fail('spec.tier', bad);
  }
  return given || undefined;
}

/** A Calico NetworkPolicy's spec, or a GlobalNetworkPolicy's when `global`. */
export function checkCalicoPolicy(c: Checker, s: Obj, global: boolean): CalicoNetworkPolicySpec | GlobalNetworkPolicySpec {
  const fields = ['tier', 'order', 'selector', 'types', 'ingress', 'egress'];
  c.only(s, global ? [...fields, 'namespaceSelector'] : fields, 'spec', POLICY_UNSUPPORTED);
  const spec: Obj = {};
  const t = policyTier(c, s);
  if (t !== undefined) spec.tier = t;
  if (s.order !== undefined && s.order !== null) {
    if (typeof s.order !== 'number' || !Number.isFinite(s.order)) c.fail('spec.order', `must be a number, not ${JSON.stringify(s.order)}`);
    spec.order = s.order;
  }
  const sel = selector(c, s, 'selector', 'spec', false);
  if (sel !== undefined) spec.selector = sel;
  if (global) {
    const ns = selector(c, s, 'namespaceSelector', 'spec', false);
    if (ns !== undefined) spec.namespaceSelector = ns;
  }
  const rules: Partial<Record<'ingress' | 'egress', CalicoRule[]>> = {};
  for (const dir of ['ingress', 'egress'] as const) {
    const list = c.list(s, dir, 'spec', 'a list of rules');
    if (list) rules[dir] = list.map((r, i) => rule(c, r, `spec.${dir}[${i}]`));
  }
  const given = c.list(s, 'types', 'spec', 'a list of Ingress and Egress');
  let types: PolicyType[];
  if (given) {
    types = given.map((t, i) => {
      if (t !== 'Ingress' && t !== 'Egress') c.fail(`spec.types[${i}]`, `must be Ingress or Egress, not ${JSON.stringify(t)}`);
      if (given.indexOf(t) !== i) c.fail(`spec.types[${i}]`, `${t} is listed twice`);
      return t;
    });
  } else {
    // Calico's default: Egress alone when there are only egress rules, both when both, else Ingress.
    const ing = (rules.ingress?.length ?? 0) > 0;
    const eg = (rules.egress?.length ?? 0) > 0;
    types = ing && eg ? ['Ingress', 'Egress'] : eg ? ['Egress'] : ['Ingress'];
  }
  spec.types = types;
  if (rules.ingress) spec.ingress = rules.ingress;
  if (rules.egress) spec.egress = rules.egress;
  return spec as unknown as CalicoNetworkPolicySpec;
}
