// The reference side of the policy benchmark: the same PolicyInput felix compiles, written the
// way Calico's iptables dataplane (and kube-router's) writes it. One ipset per selector, ipBlock
// and named port set (`hash:net`, `hash:ip,port`), loaded with `ipset restore`; a chain per
// policy and direction (`cali-pi-…`/`cali-po-…`: an Allow sets the accept mark and returns), a
// chain per local endpoint and direction (`cali-tw-…`/`cali-fw-…`: per tier, jump to each
// policy while the pass mark is clear, return once one accepted, drop at the tier's end),
// reached from `cali-FORWARD` through `-i cali+`/`-o cali+` and a dispatch chain of
// `-i <iface> -g cali-fw-<iface>`; loaded with `iptables-restore`. IPv4 only (Calico runs
// ip6tables beside it for IPv6).
//
// A change is applied as Calico's felix applies it: set members with one `ipset restore` of
// add/del lines, changed chains with one `iptables-restore --noflush` that re-declares
// (flushes) and refills only them.
import { createHash } from 'node:crypto';
import {
  type AddressSet,
  type FelixPolicy,
  type NamedPortSet,
  type PolicyEndpoint,
  type PolicyInput,
  type PolicyRule,
  type PortRange,
  policyTier,
} from '../felix/index.js';
import { runIn } from './policy-exec.js';

const ACCEPT_MARK = '0x10000/0x10000';
const PASS_MARK = '0x20000/0x20000';
const PASS_CLEAR_TEST = '0x0/0x20000';
const MAX_ELEMENTS = 1 << 20;

const hash = (text: string, n: number): string => createHash('sha256').update(text).digest('hex').slice(0, n);
/** ipset names hold 31 characters; Calico's are `cali40s:` and a hash too. */
export const ipsetName = (id: string): string => `cali40s:${hash(id, 20)}`;
/** iptables chain names hold 28. */
const policyChain = (id: string, dir: 'ingress' | 'egress'): string => `cali-${dir === 'ingress' ? 'pi' : 'po'}-${hash(id, 18)}`;
const endpointChain = (iface: string, dir: 'ingress' | 'egress'): string => `cali-${dir === 'ingress' ? 'tw' : 'fw'}-${iface}`;
const FROM_DISPATCH = 'cali-from-wl-dispatch';
const TO_DISPATCH = 'cali-to-wl-dispatch';
const FORWARD = 'cali-FORWARD';

/** IPv4 members as ipset takes them (a /0 is two /1s: hash:net refuses /0). */
function v4Members(members: readonly string[]): string[] {
  const out: string[] = [];
  for (const m of members) {
    if (m.includes(':')) continue;
    if (m.endsWith('/0')) out.push('0.0.0.0/1', '128.0.0.0/1');
    else out.push(m);
  }
  return out;
}

function namedPortMembers(s: NamedPortSet): string[] {
  return s.members.filter((m) => !m.address.includes(':')).map((m) => `${m.address},${m.protocol}:${m.port}`);
}

const PROTO: Readonly<Record<number, string>> = { 1: 'icmp', 6: 'tcp', 17: 'udp', 132: 'sctp' };
const protoText = (p: string | number): string => (typeof p === 'number' ? (PROTO[p] ?? String(p)) : p);
const portText = (r: PortRange): string => (r.first === r.last ? String(r.first) : `${r.first}:${r.last}`);

/** One policy rule as iptables rule lines (none when it can only match IPv6). */
function ruleLines(chain: string, rule: PolicyRule): string[] {
  const m = rule.match;
  if (m.ipVersion === 6 || m.protocol === 'icmpv6') return [];
  const parts: string[] = [];
  if (m.protocol !== undefined) parts.push(`-p ${protoText(m.protocol)}`);
  if (m.notProtocol !== undefined) parts.push(`! -p ${protoText(m.notProtocol)}`);
  for (const s of m.srcSets ?? []) parts.push(`-m set --match-set ${ipsetName(s)} src`);
  for (const s of m.notSrcSets ?? []) parts.push(`-m set ! --match-set ${ipsetName(s)} src`);
  for (const s of m.dstSets ?? []) parts.push(`-m set --match-set ${ipsetName(s)} dst`);
  for (const s of m.notDstSets ?? []) parts.push(`-m set ! --match-set ${ipsetName(s)} dst`);
  if (m.dstNamedPorts !== undefined) parts.push(`-m set --match-set ${ipsetName(m.dstNamedPorts)} dst,dst`);
  const ports = (ranges: readonly PortRange[] | undefined, flag: string, negate: boolean) => {
    if (ranges?.length) parts.push(`-m multiport ${negate ? '! ' : ''}--${flag} ${ranges.map(portText).join(',')}`);
  };
  ports(m.srcPorts, 'sports', false);
  ports(m.notSrcPorts, 'sports', true);
  ports(m.dstPorts, 'dports', false);
  ports(m.notDstPorts, 'dports', true);
  if (m.icmp) parts.push(`-m icmp --icmp-type ${m.icmp.type}${m.icmp.code !== undefined ? `/${m.icmp.code}` : ''}`);
  if (m.notIcmp) parts.push(`-m icmp ! --icmp-type ${m.notIcmp.type}${m.notIcmp.code !== undefined ? `/${m.notIcmp.code}` : ''}`);
  const match = parts.length ? `${parts.join(' ')} ` : '';
  switch (rule.action) {
    case 'Allow':
      return [`-A ${chain} ${match}-j MARK --set-xmark ${ACCEPT_MARK}`, `-A ${chain} -m mark --mark ${ACCEPT_MARK} -j RETURN`];
    case 'Deny':
      return [`-A ${chain} ${match}-j DROP`];
    case 'Pass':
      return [`-A ${chain} ${match}-j MARK --set-xmark ${PASS_MARK}`, `-A ${chain} -m mark --mark ${PASS_MARK} -j RETURN`];
    default:
      return [`-A ${chain} ${match}-j LOG --log-prefix "calico-packet: "`];
  }
}

function policyChains(p: FelixPolicy): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const dir of ['ingress', 'egress'] as const) {
    const rules = p[dir];
    if (rules === undefined) continue;
    const chain = policyChain(p.id, dir);
    out.set(
      chain,
      rules.flatMap((r) => ruleLines(chain, r)),
    );
  }
  return out;
}

function endpointChains(e: PolicyEndpoint, policies: ReadonlyMap<string, FelixPolicy>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const dir of ['ingress', 'egress'] as const) {
    const chain = endpointChain(e.iface, dir);
    const lines = [`-A ${chain} -m conntrack --ctstate INVALID -j DROP`, `-A ${chain} -j MARK --set-xmark 0x0/0x30000`];
    let tiers = 0;
    for (const given of e[dir]) {
      const tier = policyTier(given);
      const applying = tier.policies.filter((id) => policies.get(id)?.[dir] !== undefined);
      if (!applying.length) continue;
      tiers++;
      lines.push(`-A ${chain} -j MARK --set-xmark 0x0/0x20000`);
      for (const id of applying) {
        lines.push(`-A ${chain} -m mark --mark ${PASS_CLEAR_TEST} -j ${policyChain(id, dir)}`);
        lines.push(`-A ${chain} -m mark --mark ${ACCEPT_MARK} -j RETURN`);
      }
      if (tier.defaultAction !== 'Pass') lines.push(`-A ${chain} -m mark --mark ${PASS_CLEAR_TEST} -j DROP`);
    }
    // No policy in this direction: allowed, as a Calico profile that allows all.
    if (!tiers) lines.push(`-A ${chain} -j MARK --set-xmark ${ACCEPT_MARK}`);
    out.set(chain, lines);
  }
  return out;
}

function dispatchChains(endpoints: readonly PolicyEndpoint[]): Map<string, string[]> {
  return new Map([
    [FROM_DISPATCH, endpoints.map((e) => `-A ${FROM_DISPATCH} -i ${e.iface} -g ${endpointChain(e.iface, 'egress')}`)],
    [TO_DISPATCH, endpoints.map((e) => `-A ${TO_DISPATCH} -o ${e.iface} -g ${endpointChain(e.iface, 'ingress')}`)],
  ]);
}

const FORWARD_RULES = [
  `-A FORWARD -j ${FORWARD}`,
  `-A ${FORWARD} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
  `-A ${FORWARD} -j MARK --set-xmark 0x0/0x30000`,
  `-A ${FORWARD} -i cali+ -j ${FROM_DISPATCH}`,
  `-A ${FORWARD} -o cali+ -j ${TO_DISPATCH}`,
  `-A ${FORWARD} -m mark --mark ${ACCEPT_MARK} -j ACCEPT`,
];

function restoreText(
  chains: ReadonlyMap<string, readonly string[]>,
  extra: readonly string[] = [],
  deleted: readonly string[] = [],
): string {
  const out = ['*filter'];
  for (const name of [...chains.keys(), ...deleted]) out.push(`:${name} - [0:0]`);
  out.push(...extra);
  for (const lines of chains.values()) out.push(...lines);
  for (const name of deleted) out.push(`-X ${name}`);
  out.push('COMMIT', '');
  return out.join('\n');
}

interface SetState {
  readonly name: string;
  readonly source: AddressSet | NamedPortSet;
  readonly members: ReadonlySet<string>;
}

/** What one change took: the text written, and how long each step ran. */
export interface ReferenceChange {
  readonly renderMs: number;
  readonly ipsetMs: number;
  readonly iptablesMs: number;
  /** ipset add/del lines, and `create` lines counted as their elements. */
  readonly elements: number;
  /** Chains re-declared (flushed and refilled) by the iptables-restore. */
  readonly chains: number;
  readonly ruleLines: number;
}

/** The kernel side of the reference, in one network namespace, kept equal to a PolicyInput. */
export class IptablesReference {
  private sets = new Map<string, SetState>();
  private policies = new Map<string, FelixPolicy>();
  private endpoints = new Map<string, PolicyEndpoint>();
  private input?: PolicyInput;
  /** Each chain's rules as last written: a chain is rewritten only when they differ, and deleted only when it was made. */
  private readonly written = new Map<string, readonly string[]>();

  constructor(readonly netns: string) {}

  /** Set elements the reference has written and not deleted: what `ipset save` must list. */
  expectedElements(): number {
    let n = 0;
    for (const s of this.sets.values()) n += s.members.size;
    return n;
  }

  /** Rules and set elements the kernel holds now, as listed back by iptables-save and ipset save. */
  async kernelCounts(): Promise<{ rules: number; sets: number; elements: number }> {
    const rules = (await runIn(this.netns, 'iptables-save', [])).stdout.split('\n').filter((l) => l.startsWith('-A ')).length;
    const sets = (await runIn(this.netns, 'ipset', ['save'])).stdout.split('\n');
    return { rules, sets: sets.filter((l) => l.startsWith('create ')).length, elements: sets.filter((l) => l.startsWith('add ')).length };
  }

  /** Applies `next`: everything on the first call, the difference afterwards. */
  async apply(next: PolicyInput): Promise<ReferenceChange> {
    const t0 = performance.now();
    const policies = new Map(next.policies.map((p) => [p.id, p]));
    const ipset: string[] = [];
    const destroy: string[] = [];
    const nextSets = new Map<string, SetState>();
    const sources: [AddressSet | NamedPortSet, boolean][] = [
      ...next.sets.map((s): [AddressSet, boolean] => [s, false]),
      ...next.namedPortSets.map((s): [NamedPortSet, boolean] => [s, true]),
    ];
    for (const [s, named] of sources) {
      const had = this.sets.get(s.id);
      if (had?.source === s) {
        nextSets.set(s.id, had);
        continue;
      }
      const members = new Set(named ? namedPortMembers(s as NamedPortSet) : v4Members((s as AddressSet).members));
      const state = { name: ipsetName(s.id), source: s, members };
      nextSets.set(s.id, state);
      if (!had) ipset.push(`create ${state.name} ${named ? 'hash:ip,port' : 'hash:net'} family inet maxelem ${MAX_ELEMENTS}`);
      const before = had?.members ?? new Set<string>();
      for (const m of before) if (!members.has(m)) ipset.push(`del ${state.name} ${m}`);
      for (const m of members) if (!before.has(m)) ipset.push(`add ${state.name} ${m}`);
    }
    const elements = ipset.filter((l) => !l.startsWith('create ')).length;
    for (const [id, s] of this.sets) if (!nextSets.has(id)) destroy.push(`destroy ${s.name}`);

    const first = this.input === undefined;
    const chains = new Map<string, string[]>();
    // Only objects the calculation graph rebuilt can differ; of those, only chains whose rules changed are written.
    const put = (built: Map<string, string[]>) => {
      for (const [c, lines] of built) {
        const had = this.written.get(c);
        if (!had || had.length !== lines.length || had.some((l, i) => l !== lines[i])) chains.set(c, lines);
      }
    };
    for (const p of next.policies) if (this.policies.get(p.id) !== p) put(policyChains(p));
    const nextEndpoints = new Map(next.endpoints.map((e) => [e.iface, e]));
    for (const e of next.endpoints) if (this.endpoints.get(e.iface) !== e) put(endpointChains(e, policies));
    const endpointsMoved =
      first || next.endpoints.length !== this.endpoints.size || next.endpoints.some((e) => !this.endpoints.has(e.iface));
    if (endpointsMoved) put(dispatchChains(next.endpoints));
    // Chains of policies and endpoints that went: flushed and deleted once nothing jumps to them.
    const gone: string[] = [];
    for (const id of this.policies.keys()) if (!policies.has(id)) gone.push(policyChain(id, 'ingress'), policyChain(id, 'egress'));
    for (const iface of this.endpoints.keys())
      if (!nextEndpoints.has(iface)) gone.push(endpointChain(iface, 'ingress'), endpointChain(iface, 'egress'));
    const existing = gone.filter((c) => this.written.has(c));
    let iptables = '';
    if (first) {
      chains.set(FORWARD, []);
      iptables = restoreText(chains, FORWARD_RULES);
    } else if (chains.size || existing.length) {
      // A chain that goes is flushed with the others and deleted last, once the chains that
      // jumped to it have been refilled, all in the same transaction.
      iptables = restoreText(chains, [], existing);
    }
    const ruleCount = [...chains.values()].reduce((n, l) => n + l.length, 0);
    const renderMs = performance.now() - t0;

    let ipsetMs = 0;
    let iptablesMs = 0;
    if (ipset.length) ipsetMs += (await runIn(this.netns, 'ipset', ['-exist', 'restore'], `${ipset.join('\n')}\n`)).ms;
    if (iptables) iptablesMs = (await runIn(this.netns, 'iptables-restore', first ? [] : ['--noflush'], iptables)).ms;
    if (destroy.length) ipsetMs += (await runIn(this.netns, 'ipset', ['-exist', 'restore'], `${destroy.join('\n')}\n`)).ms;

    for (const [c, lines] of chains) this.written.set(c, lines);
    for (const c of existing) this.written.delete(c);
    this.sets = nextSets;
    this.policies = policies;
    this.endpoints = nextEndpoints;
    this.input = next;
    return { renderMs, ipsetMs, iptablesMs, elements, chains: chains.size, ruleLines: ruleCount };
  }
}
