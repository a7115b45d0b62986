// A reference evaluator of felix's PolicyInput: what the first packet of a connection meets on
// one endpoint in one direction, by the semantics stated in felix/policy/input.ts. It reads the
// same resolved sets and rules that felix compiles, so `explain` answers from the very model the
// kernel is programmed with.
import type {
  AddressSet,
  NamedPortSet,
  Policy,
  PolicyRule,
  PortRange,
  Protocol,
  RuleMatch,
  TierPolicies,
} from '../../felix/policy/input.js';
import { policyTier } from '../../felix/policy/input.js';
import { type Address, type Cidr, cidrContains, parseAddress, parseInterfaceAddress } from '../../ip/index.js';
import { protocolNumber } from './protocol.js';

/** The first packet of a connection. */
export interface Packet {
  readonly src: string;
  readonly dst: string;
  readonly protocol: Protocol;
  readonly srcPort?: number;
  readonly dstPort?: number;
  readonly icmp?: { readonly type: number; readonly code?: number };
}

export type Direction = 'ingress' | 'egress';

/** Where a rule sits: its policy, direction and index in felix's rule list. */
export interface RuleRef {
  readonly policy: string;
  readonly direction: Direction;
  readonly index: number;
  readonly action: PolicyRule['action'];
}

export interface DirectionVerdict {
  readonly allowed: boolean;
  /**
   * `no-policy`: no tier selects the endpoint in this direction; `rule`: an Allow or Deny
   * decided (`rule` says which); `end-of-tier`: the policies of tier `tier` selected the
   * endpoint, none decided and the tier's default action is Deny; `passed`: every tier passed
   * the packet on (by a Pass rule or its default action), so the endpoint's profile allows it.
   */
  readonly reason: 'no-policy' | 'rule' | 'end-of-tier' | 'passed';
  readonly rule?: RuleRef;
  /** Index of the tier that decided (for `rule` and `end-of-tier`). */
  readonly tier?: number;
  /** Its name ("" for an unnamed tier). */
  readonly tierName?: string;
  /** Log rules the packet met on the way, in order. */
  readonly logged: readonly RuleRef[];
}

/** Set lookups over a PolicyInput's sets, parsed once. */
export class SetIndex {
  private readonly address = new Map<string, Cidr[]>();
  private readonly namedPorts = new Map<string, Set<string>>();

  constructor(sets: readonly AddressSet[], namedPortSets: readonly NamedPortSet[]) {
    for (const s of sets)
      this.address.set(
        s.id,
        s.members.map((m) => parseInterfaceAddress(m, s.id)),
      );
    for (const s of namedPortSets) {
      this.namedPorts.set(s.id, new Set(s.members.map((m) => `${canonical(m.address)} ${protocolNumber(m.protocol)} ${m.port}`)));
    }
  }

  has(id: string, address: Address): boolean {
    const members = this.address.get(id);
    if (!members) throw new Error(`rule names set ${id}, which the input does not hold`);
    return members.some((c) => cidrContains(c, address));
  }

  hasNamedPort(id: string, address: string, protocol: Protocol, port: number | undefined): boolean {
    const members = this.namedPorts.get(id);
    if (!members) throw new Error(`rule names named port set ${id}, which the input does not hold`);
    return port !== undefined && members.has(`${canonical(address)} ${protocolNumber(protocol)} ${port}`);
  }
}

function canonical(address: string): string {
  const a = parseAddress(address);
  return `${a.family}:${a.bytes.join('.')}`;
}

const inRanges = (port: number | undefined, ranges: readonly PortRange[]): boolean =>
  port !== undefined && ranges.some((r) => port >= r.first && port <= r.last);

const PORTED = new Set([6, 17, 132]);
const ICMP = new Set([1, 58]);

/** Whether a packet meets every condition of a rule's match. */
export function ruleMatches(m: RuleMatch, p: Packet, sets: SetIndex): boolean {
  const src = parseAddress(p.src, 'src');
  const dst = parseAddress(p.dst, 'dst');
  const proto = protocolNumber(p.protocol);
  const ported = PORTED.has(proto);
  const srcPort = ported ? p.srcPort : undefined;
  const dstPort = ported ? p.dstPort : undefined;
  if (m.ipVersion !== undefined && m.ipVersion !== src.family) return false;
  if (m.protocol !== undefined && protocolNumber(m.protocol) !== proto) return false;
  if (m.notProtocol !== undefined && protocolNumber(m.notProtocol) === proto) return false;
  if (m.srcSets && !m.srcSets.every((id) => sets.has(id, src))) return false;
  if (m.notSrcSets?.some((id) => sets.has(id, src))) return false;
  if (m.dstSets && !m.dstSets.every((id) => sets.has(id, dst))) return false;
  if (m.notDstSets?.some((id) => sets.has(id, dst))) return false;
  if (m.srcPorts && !inRanges(srcPort, m.srcPorts)) return false;
  if (m.notSrcPorts && (srcPort === undefined || inRanges(srcPort, m.notSrcPorts))) return false;
  if (m.dstPorts && !inRanges(dstPort, m.dstPorts)) return false;
  if (m.notDstPorts && (dstPort === undefined || inRanges(dstPort, m.notDstPorts))) return false;
  if (m.dstNamedPorts !== undefined && !sets.hasNamedPort(m.dstNamedPorts, p.dst, p.protocol, dstPort)) return false;
  const icmp = ICMP.has(proto) ? p.icmp : undefined;
  const icmpIs = (x: { type: number; code?: number }) =>
    icmp !== undefined && icmp.type === x.type && (x.code === undefined || icmp.code === x.code);
  if (m.icmp && !icmpIs(m.icmp)) return false;
  // As nft's `icmp type != …`, a negated ICMP match needs an ICMP packet.
  if (m.notIcmp && (icmp === undefined || icmpIs(m.notIcmp))) return false;
  return true;
}

export interface EvaluateOptions {
  /** Staged policies decide as if enforced (the tiers given are then an "as if" view); by default they are passed over. */
  readonly staged?: 'skip' | 'enforce';
}

/**
 * The verdict of an endpoint's tiers in one direction on a packet: in each tier the policies in
 * order, in each policy its rules in order; Allow or Deny decides, Pass goes to the next tier, a
 * policy without a matching rule hands over to the next policy; a tier where nothing decided
 * applies its default action (Deny, or Pass: on to the next tier); past the last tier, allowed.
 * Staged policies count only: unless `options.staged` is `enforce` they are passed over, and a
 * tier naming nothing else is no tier.
 */
export function evaluateTiers(
  tiers: readonly TierPolicies[],
  direction: Direction,
  policies: ReadonlyMap<string, Policy>,
  p: Packet,
  sets: SetIndex,
  options: EvaluateOptions = {},
): DirectionVerdict {
  const logged: RuleRef[] = [];
  const enforceStaged = options.staged === 'enforce';
  let applied = false;
  nextTier: for (const [tier, given] of tiers.entries()) {
    const t = policyTier(given);
    let ran = t.policies.length === 0;
    for (const id of t.policies) {
      const policy = policies.get(id);
      if (!policy) throw new Error(`endpoint names policy ${id}, which the input does not hold`);
      if (policy.staged && !enforceStaged) continue;
      ran = true;
      applied = true;
      for (const [index, rule] of (policy[direction] ?? []).entries()) {
        if (!ruleMatches(rule.match, p, sets)) continue;
        const ref: RuleRef = { policy: id, direction, index, action: rule.action };
        if (rule.action === 'Log') logged.push(ref);
        else if (rule.action === 'Pass') continue nextTier;
        else return { allowed: rule.action === 'Allow', reason: 'rule', rule: ref, tier, tierName: t.name, logged };
      }
    }
    if (!ran) continue;
    applied = true;
    if (t.defaultAction === 'Pass') continue;
    return { allowed: false, reason: 'end-of-tier', tier, tierName: t.name, logged };
  }
  return { allowed: true, reason: applied ? 'passed' : 'no-policy', logged };
}
