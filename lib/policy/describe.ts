// Parsed rules in words, and resolved to the pods they match today: what `explain` prints for
// each rule. The words follow the manifests' own terms (selectors as written in Calico's
// syntax, nets as CIDRs), so an operator can find the field a line comes from.
import type { Protocol } from '../../felix/policy/input.js';
import { cidrContains, parseAddress, parseCidr } from '../../ip/index.js';
import type { EndpointSelection, IcmpMatch, NamespaceScope, ParsedRule, ParsedRuleSide, PortMatch } from './model.js';
import { protocolNumber } from './protocol.js';
import type { SelectionMatcher } from './selection.js';
import type { Workload } from './workload.js';

const PROTOCOL_NAMES: Readonly<Record<number, string>> = { 1: 'ICMP', 6: 'TCP', 17: 'UDP', 58: 'ICMPv6', 132: 'SCTP', 136: 'UDPLite' };

export function protocolText(p: Protocol): string {
  return PROTOCOL_NAMES[protocolNumber(p)] ?? `protocol ${protocolNumber(p)}`;
}

export function scopeText(s: NamespaceScope): string {
  switch (s.kind) {
    case 'name':
      return `in namespace ${s.name}`;
    case 'selector':
      return `in namespaces matching ${s.selector}`;
    case 'all':
      return 'in every namespace';
    case 'global':
      return 'among non-namespaced endpoints (a podroute cluster has none)';
  }
}

export function selectionText(s: EndpointSelection): string {
  return `${s.selector === 'all()' ? 'every pod' : `pods matching ${s.selector}`} ${scopeText(s.namespaces)}`;
}

function portsText(ports: readonly PortMatch[]): string {
  const numbers = ports.flatMap((p) => ('name' in p ? [] : [p.first === p.last ? `${p.first}` : `${p.first}-${p.last}`]));
  const names = ports.flatMap((p) => ('name' in p ? [p.name] : []));
  const parts: string[] = [];
  if (numbers.length) parts.push(`${numbers.length > 1 || numbers[0]!.includes('-') ? 'ports' : 'port'} ${numbers.join(', ')}`);
  if (names.length) parts.push(`${names.length > 1 ? 'named ports' : 'named port'} ${names.join(', ')}`);
  return parts.join(' or ');
}

/** The addresses a side picks, in words; "anywhere" when it picks no addresses at all. */
export function sideText(side: ParsedRuleSide): string {
  const parts: string[] = [];
  if (side.selection) parts.push(selectionText(side.selection));
  if (side.nets?.length) parts.push(`addresses in ${side.nets.join(', ')}`);
  if (side.notNets?.length) parts.push(`except ${side.notNets.join(', ')}`);
  if (side.notSelection) parts.push(`except ${selectionText(side.notSelection)}`);
  return parts.length ? parts.join(' ') : 'anywhere';
}

function icmpText(i: IcmpMatch): string {
  return `type ${i.type}${i.code !== undefined ? ` code ${i.code}` : ''}`;
}

/** What a rule matches besides its peer: protocol, ports, ICMP, IP version. */
export function trafficText(r: ParsedRule): string {
  const parts: string[] = [];
  if (r.ipVersion) parts.push(`IPv${r.ipVersion}`);
  parts.push(r.protocol !== undefined ? protocolText(r.protocol) : 'any protocol');
  if (r.notProtocol !== undefined) parts.push(`but ${protocolText(r.notProtocol)}`);
  if (r.destination.ports?.length) parts.push(portsText(r.destination.ports));
  if (r.destination.notPorts?.length) parts.push(`except ${portsText(r.destination.notPorts)}`);
  if (r.source.ports?.length) parts.push(`from source ${portsText(r.source.ports)}`);
  if (r.source.notPorts?.length) parts.push(`except from source ${portsText(r.source.notPorts)}`);
  if (r.icmp) parts.push(icmpText(r.icmp));
  if (r.notIcmp) parts.push(`except ${icmpText(r.notIcmp)}`);
  return parts.join(' ');
}

const hasAddresses = (s: ParsedRuleSide): boolean => Boolean(s.selection || s.nets?.length || s.notSelection || s.notNets?.length);

/** A rule in one line, from the point of view of the endpoint it guards. */
export function ruleText(r: ParsedRule, direction: 'ingress' | 'egress'): string {
  const traffic = trafficText(r);
  if (direction === 'ingress') {
    const to = hasAddresses(r.destination) ? ` to ${sideText(r.destination)}` : '';
    return `${r.action} ${traffic} from ${sideText(r.source)}${to}`;
  }
  const from = hasAddresses(r.source) ? ` from ${sideText(r.source)}` : '';
  return `${r.action} ${traffic} to ${sideText(r.destination)}${from}`;
}

/**
 * The workloads a side picks today: in its selection (when it has one), in its nets (when it
 * has some), and in neither exception. Undefined when the side picks no addresses (anywhere).
 */
export function sideWorkloads(side: ParsedRuleSide, workloads: Iterable<Workload>, matcher: SelectionMatcher): Workload[] | undefined {
  if (!hasAddresses(side)) return undefined;
  const nets = side.nets?.map((n) => parseCidr(n));
  const notNets = side.notNets?.map((n) => parseCidr(n));
  const out: Workload[] = [];
  for (const w of workloads) {
    if (side.selection && !matcher.matches(side.selection, w)) continue;
    if (side.notSelection && matcher.matches(side.notSelection, w)) continue;
    const inside = w.addresses.filter((a) => {
      const address = parseAddress(a);
      return (!nets || nets.some((n) => cidrContains(n, address))) && !notNets?.some((n) => cidrContains(n, address));
    });
    if (inside.length) out.push(w);
  }
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
