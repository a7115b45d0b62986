// One RuleMatch as nft match expressions. Address matches name per-family kernel sets, so a
// rule that matches on sets becomes one nft rule per family it can match (an IPv4 set says
// nothing of an IPv6 packet); its text never depends on what the sets hold, so a pod coming
// or going changes set elements only. A match that no packet of either family can satisfy
// (IPv6 and ICMP, tcp and not tcp) yields no rule at all.
import { PolicyCompileError } from './compile-error.js';
import type { PortRange, Protocol, RuleMatch } from './input.js';

type Family = 4 | 6;

/** How the compiler's set names are looked up; both throw for an id the input does not hold. */
export interface SetNames {
  address(id: string, family: Family, field: string): string;
  namedPort(id: string, family: Family, field: string): string;
}

export interface MatchExpression {
  /** Set when the expression matches one family only. */
  readonly family?: Family;
  /** The statements, e.g. `ip saddr @s4-web tcp dport 80`; empty matches every packet. */
  readonly expr: string;
}

const NAMES: Readonly<Record<number, string>> = { 1: 'icmp', 6: 'tcp', 17: 'udp', 58: 'icmpv6', 132: 'sctp' };
const NUMBERS: Readonly<Record<string, number>> = { icmp: 1, tcp: 6, udp: 17, icmpv6: 58, sctp: 132 };
/** Protocols with 16-bit ports at the start of their header, which nft's `th` reads. */
const PORTED_NUMBERS = new Set([6, 17, 33, 132, 136]);

/** A protocol as nft names it: a name it knows, else the number. */
function protocolText(p: Protocol, field: string): string {
  if (typeof p === 'number') {
    if (!Number.isInteger(p) || p < 0 || p > 255) throw new PolicyCompileError(field, `${p} is not an IP protocol number (0..255)`);
    return NAMES[p] ?? String(p);
  }
  if (!(p in NUMBERS)) throw new PolicyCompileError(field, `${JSON.stringify(p)} is not tcp, udp, sctp, icmp, icmpv6 or a number`);
  return p;
}

const protocolNumber = (text: string): number => NUMBERS[text] ?? Number(text);

/** The families a protocol can be carried in. */
function protocolFamilies(text: string): readonly Family[] {
  return text === 'icmp' ? [4] : text === 'icmpv6' ? [6] : [4, 6];
}

/** Ranges sorted, overlapping and touching ones joined, as nft text (`80`, `1000-2000`). */
export function portList(ranges: readonly PortRange[], field: string): string[] {
  ranges.forEach((r, i) => {
    const ok = Number.isInteger(r.first) && Number.isInteger(r.last) && r.first >= 0 && r.last <= 65535 && r.first <= r.last;
    if (!ok) throw new PolicyCompileError(`${field}[${i}]`, `${r.first}-${r.last} is not a port range (0..65535, first <= last)`);
  });
  const sorted = [...ranges].sort((a, b) => a.first - b.first || a.last - b.last);
  const joined: { first: number; last: number }[] = [];
  for (const r of sorted) {
    const prev = joined[joined.length - 1];
    if (prev && r.first <= prev.last + 1) prev.last = Math.max(prev.last, r.last);
    else joined.push({ first: r.first, last: r.last });
  }
  return joined.map((r) => (r.first === r.last ? String(r.first) : `${r.first}-${r.last}`));
}

/** `80`, or an anonymous set `{ 80, 1000-2000 }` when there is more than one. */
function portValue(ranges: readonly PortRange[], field: string): string {
  const list = portList(ranges, field);
  return list.length === 1 ? list[0]! : `{ ${list.join(', ')} }`;
}

function icmpTerms(family: Family, icmp: { readonly type: number; readonly code?: number }, negate: boolean, field: string): string {
  const kw = family === 4 ? 'icmp' : 'icmpv6';
  const byte = (v: number, what: string) => {
    if (!Number.isInteger(v) || v < 0 || v > 255) throw new PolicyCompileError(`${field}.${what}`, `${v} is not an ICMP ${what} (0..255)`);
    return v;
  };
  const type = byte(icmp.type, 'type');
  if (icmp.code === undefined) return `${kw} type ${negate ? '!= ' : ''}${type}`;
  const code = byte(icmp.code, 'code');
  // "not (type and code)" is a disjunction, which one rule can say only as a concatenation.
  return negate ? `${kw} type . ${kw} code != { ${type} . ${code} }` : `${kw} type ${type} ${kw} code ${code}`;
}

/**
 * The nft expressions of one rule's match, in the order a person reads them: family, protocol,
 * addresses, named ports, ports, ICMP. `field` names the rule in errors.
 */
export function matchExpressions(match: RuleMatch, sets: SetNames, field: string): MatchExpression[] {
  const protocol = match.protocol === undefined ? undefined : protocolText(match.protocol, `${field}.protocol`);
  const notProtocol = match.notProtocol === undefined ? undefined : protocolText(match.notProtocol, `${field}.notProtocol`);
  if (protocol !== undefined && protocol === notProtocol) return [];

  const hasPorts = [match.srcPorts, match.notSrcPorts, match.dstPorts, match.notDstPorts].some((p) => p !== undefined && p.length > 0);
  const hasIcmp = match.icmp !== undefined || match.notIcmp !== undefined;
  if ((hasPorts || match.dstNamedPorts !== undefined) && (protocol === undefined || !PORTED_NUMBERS.has(protocolNumber(protocol)))) {
    throw new PolicyCompileError(field, `ports need protocol tcp, udp or sctp (got ${protocol ?? 'none'})`);
  }
  // ICMP type and code only exist in ICMP packets.
  if (hasIcmp && protocol !== undefined && protocol !== 'icmp' && protocol !== 'icmpv6') return [];

  let families: readonly Family[] = [4, 6];
  if (match.ipVersion !== undefined) {
    if (match.ipVersion !== 4 && match.ipVersion !== 6)
      throw new PolicyCompileError(`${field}.ipVersion`, `${match.ipVersion} is not 4 or 6`);
    families = families.filter((f) => f === match.ipVersion);
  }
  if (protocol !== undefined) families = families.filter((f) => protocolFamilies(protocol).includes(f));
  if (families.length === 0) return [];

  const addressLists = [match.srcSets, match.notSrcSets, match.dstSets, match.notDstSets];
  const perFamily =
    match.ipVersion !== undefined ||
    hasIcmp ||
    match.dstNamedPorts !== undefined ||
    protocol === 'icmp' ||
    protocol === 'icmpv6' ||
    addressLists.some((l) => l !== undefined && l.length > 0);
  if (!perFamily) return [{ expr: terms(match, undefined, protocol, notProtocol, sets, field).join(' ') }];
  return families.map((family) => ({ family, expr: terms(match, family, protocol, notProtocol, sets, field).join(' ') }));
}

function terms(
  match: RuleMatch,
  family: Family | undefined,
  protocol: string | undefined,
  notProtocol: string | undefined,
  sets: SetNames,
  field: string,
): string[] {
  const out: string[] = [];
  const ip = family === 6 ? 'ip6' : 'ip';
  const addressed = family !== undefined && [match.srcSets, match.notSrcSets, match.dstSets, match.notDstSets].some((l) => l?.length);
  const icmpTyped = match.icmp !== undefined || match.notIcmp !== undefined;
  // An address or ICMP type match implies its family; nothing else in the rule does.
  if (family !== undefined && !addressed && !icmpTyped && match.dstNamedPorts === undefined) out.push(`meta nfproto ipv${family}`);

  const ported = [match.srcPorts, match.notSrcPorts, match.dstPorts, match.notDstPorts].some((p) => p?.length);
  const named = protocol !== undefined && protocol in NUMBERS && protocol !== 'icmp' && protocol !== 'icmpv6';
  // `tcp dport` implies the protocol; `th dport` (a protocol nft has no header for) does not,
  // and an ICMP type implies its protocol too.
  if (protocol !== undefined && !(ported && named) && !icmpTyped) out.push(`meta l4proto ${protocol}`);
  if (notProtocol !== undefined) out.push(`meta l4proto != ${notProtocol}`);

  if (family !== undefined) {
    const side = (ids: readonly string[] | undefined, dir: 'saddr' | 'daddr', negate: boolean, what: string) =>
      (ids ?? []).forEach((id, i) => {
        out.push(`${ip} ${dir} ${negate ? '!= ' : ''}@${sets.address(id, family, `${field}.${what}[${i}]`)}`);
      });
    side(match.srcSets, 'saddr', false, 'srcSets');
    side(match.notSrcSets, 'saddr', true, 'notSrcSets');
    side(match.dstSets, 'daddr', false, 'dstSets');
    side(match.notDstSets, 'daddr', true, 'notDstSets');
    if (match.dstNamedPorts !== undefined) {
      out.push(`${ip} daddr . meta l4proto . th dport @${sets.namedPort(match.dstNamedPorts, family, `${field}.dstNamedPorts`)}`);
    }
  }

  const header = named ? protocol : 'th';
  const ports = (ranges: readonly PortRange[] | undefined, dir: 'sport' | 'dport', negate: boolean, what: string) => {
    if (ranges?.length) out.push(`${header} ${dir} ${negate ? '!= ' : ''}${portValue(ranges, `${field}.${what}`)}`);
  };
  ports(match.srcPorts, 'sport', false, 'srcPorts');
  ports(match.notSrcPorts, 'sport', true, 'notSrcPorts');
  ports(match.dstPorts, 'dport', false, 'dstPorts');
  ports(match.notDstPorts, 'dport', true, 'notDstPorts');

  if (family !== undefined) {
    if (match.icmp) out.push(icmpTerms(family, match.icmp, false, `${field}.icmp`));
    if (match.notIcmp) out.push(icmpTerms(family, match.notIcmp, true, `${field}.notIcmp`));
  }
  return out;
}
