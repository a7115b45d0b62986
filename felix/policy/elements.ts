// Set elements in the form nft takes: one family per set, sorted, and for interval sets no two
// elements overlapping. nft refuses overlapping elements in a set without auto-merge, and with
// it folds them into one range, so a later removal of one member could not be said alone.
// Prefixes either nest or are disjoint, so dropping every prefix inside another leaves a set
// without overlaps; adjacent prefixes stay as they are, which nft accepts.
import { PolicyCompileError } from './compile-error.js';
import type { SortedTexts } from './sorted-texts.js';
import {
  type Cidr,
  addressValue,
  cidrNetwork,
  familyBits,
  formatAddress,
  hostPrefix,
  type IpFamily,
  parseInterfaceAddress,
} from '../../ip/index.js';

/** A member as a prefix (a bare address is its host prefix); host bits of a network are cleared. */
export function readMember(text: string, field: string): Cidr {
  try {
    return cidrNetwork(parseInterfaceAddress(text, field));
  } catch (error) {
    throw new PolicyCompileError(field, error instanceof Error ? error.message : String(error));
  }
}

interface Span {
  readonly cidr: Cidr;
  readonly first: bigint;
  readonly last: bigint;
}

function span(c: Cidr): Span {
  const first = addressValue(c.bytes);
  return { cidr: c, first, last: first + (1n << BigInt(familyBits(c.family) - c.prefixLength)) - 1n };
}

/** A prefix as nft prints it: a host prefix as the bare address. */
export function prefixText(c: Cidr): string {
  const address = formatAddress(c.bytes);
  return c.prefixLength === familyBits(c.family) ? address : `${address}/${c.prefixLength}`;
}

/** The members of one family as interval elements: sorted by address, none inside another. */
export function intervalElements(members: readonly Cidr[], family: IpFamily): string[] {
  const spans = members
    .filter((m) => m.family === family)
    .map(span)
    .sort((a, b) => (a.first !== b.first ? (a.first < b.first ? -1 : 1) : a.last > b.last ? -1 : a.last < b.last ? 1 : 0));
  const out: string[] = [];
  let end = -1n;
  for (const s of spans) {
    if (s.first <= end) continue; // inside the previous prefix (prefixes never straddle)
    out.push(prefixText(s.cidr));
    end = s.last;
  }
  return out;
}

interface Host {
  readonly family: IpFamily;
  /** The bare address as nft prints it. */
  readonly text: string;
}

// Pod addresses recur in every set their pod is in, and a set that changes is mostly the
// addresses it held: each is read once, not once per set per change. Cleared when it outgrows
// any cluster's addresses (the next reads fill it again).
const hostsRead = new Map<string, Host>();
const MAX_HOSTS_READ = 200_000;

/** A member that must be a single address; `field` names it, and `network` words the refusal of a prefix. */
function readHost(text: string, index: number, field: (index: number) => string, network: (member: string) => string): Host {
  const kept = hostsRead.get(text);
  if (kept) return kept;
  const c = readMember(text, field(index));
  if (c.prefixLength !== familyBits(c.family)) throw new PolicyCompileError(field(index), network(text));
  const host = { family: c.family, text: formatAddress(c.bytes) };
  if (hostsRead.size >= MAX_HOSTS_READ) hostsRead.clear();
  hostsRead.set(text, host);
  return host;
}

/**
 * Members that are single addresses as the elements of a plain set, per family: bare, each
 * once, in text order (a hash set has no order of its own; members given in that order, as
 * the calculation graph gives them, sort in one pass). A prefix is refused (`network` says why).
 */
export function hostElements(
  members: readonly string[],
  field: (index: number) => string,
  network: (member: string) => string,
): Record<IpFamily, string[]> {
  const byFamily: Record<IpFamily, Host[]> = { 4: [], 6: [] };
  for (let i = 0; i < members.length; i++) {
    const h = readHost(members[i], i, field, network);
    byFamily[h.family].push(h);
  }
  const elements = (hosts: Host[]): string[] => {
    const texts = hosts.map((h) => h.text).sort();
    const out: string[] = [];
    for (let i = 0; i < texts.length; i++) if (i === 0 || texts[i] !== texts[i - 1]) out.push(texts[i]);
    return out;
  };
  return { 4: elements(byFamily[4]), 6: elements(byFamily[6]) };
}

/** Per family, the elements added to and removed from a set of hosts. */
export interface HostElementsChange {
  readonly added: Record<IpFamily, string[]>;
  readonly removed: Record<IpFamily, string[]>;
}

/**
 * How hostElements of a set whose members changed differ from its elements before (`from`,
 * made of `fromCount` members), told from the members added and removed alone, without
 * reading the members that stayed. Undefined when that cannot be told from the change alone (a
 * member not in canonical text, or two members that were one element): then read them all.
 * Throws as hostElements does for a member that is a network.
 */
export function changedHostElements(
  from: Record<IpFamily, SortedTexts>,
  fromCount: number,
  added: readonly string[],
  removed: readonly string[],
  field: (index: number) => string,
  network: (member: string) => string,
): HostElementsChange | undefined {
  if (from[4].length + from[6].length !== fromCount) return undefined;
  const out = { added: { 4: [], 6: [] } as Record<IpFamily, string[]>, removed: { 4: [], 6: [] } as Record<IpFamily, string[]> };
  // What the elements hold after the removals and additions so far, where it differs from `from`.
  const went = new Set<string>();
  const came = new Set<string>();
  for (let i = 0; i < removed.length; i++) {
    const h = readHost(removed[i]!, i, field, network);
    if (h.text !== removed[i]) return undefined;
    if (went.has(h.text) || !from[h.family].has(h.text)) return undefined;
    went.add(h.text);
    out.removed[h.family].push(h.text);
  }
  for (let i = 0; i < added.length; i++) {
    const h = readHost(added[i]!, i, field, network);
    if (h.text !== added[i]) return undefined;
    if (came.has(h.text) || (!went.has(h.text) && from[h.family].has(h.text))) return undefined;
    came.add(h.text);
    out.added[h.family].push(h.text);
  }
  return out;
}

export interface NamedPortElement {
  readonly address: string;
  readonly protocol: 'tcp' | 'udp' | 'sctp';
  readonly port: number;
}

/** Named port members of one family as `address . protocol . port`, sorted, each once. */
export function namedPortElements(members: readonly NamedPortElement[], family: IpFamily, field: string): string[] {
  const rows: { value: bigint; protocol: string; port: number; text: string }[] = [];
  const seen = new Set<string>();
  members.forEach((m, i) => {
    const where = `${field}[${i}]`;
    let host: Cidr;
    try {
      host = parseInterfaceAddress(hostPrefix(m.address, `${where}.address`), `${where}.address`);
    } catch (error) {
      throw new PolicyCompileError(`${where}.address`, error instanceof Error ? error.message : String(error));
    }
    if (m.protocol !== 'tcp' && m.protocol !== 'udp' && m.protocol !== 'sctp')
      throw new PolicyCompileError(`${where}.protocol`, `${JSON.stringify(m.protocol)} is not tcp, udp or sctp`);
    if (!Number.isInteger(m.port) || m.port < 1 || m.port > 65535)
      throw new PolicyCompileError(`${where}.port`, `${m.port} is not a port (1..65535)`);
    if (host.family !== family) return;
    const text = `${formatAddress(host.bytes)} . ${m.protocol} . ${m.port}`;
    if (seen.has(text)) return;
    seen.add(text);
    rows.push({ value: addressValue(host.bytes), protocol: m.protocol, port: m.port, text });
  });
  rows.sort((a, b) =>
    a.value !== b.value ? (a.value < b.value ? -1 : 1) : a.protocol !== b.protocol ? (a.protocol < b.protocol ? -1 : 1) : a.port - b.port,
  );
  return rows.map((r) => r.text);
}
