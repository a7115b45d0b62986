// Pre-encoded BGP traffic for the injector: OPEN, KEEPALIVE, and UPDATEs packed with as many
// prefixes as fit one 4096-octet message (IPv4 in the NLRI field, IPv6 in MP_REACH_NLRI and
// MP_UNREACH_NLRI), built once with our own codec before the clock starts.
import { encodeMessage, formatIpv6, parsePrefix, type Capability, type PathAttributes } from '../../bgp/codec/index.js';
import { formatIpv4Number } from '../../ip/index.js';

export const KEEPALIVE = encodeMessage({ type: 'keepalive' });
/** Community that carries a scenario's round number to the monitor (64999:round). */
export const TAG_ASN = 64999;
export const NO_EXPORT = 0xffffff01;
const MAX = 4096;

export function openMessage(asn: number, routerId: string, holdTime: number): Buffer {
  const capabilities: Capability[] = [
    { kind: 'multiprotocol', afi: 1, safi: 1 },
    // Offered always; a daemon configured for IPv4 alone negotiates IPv4 alone.
    { kind: 'multiprotocol', afi: 2, safi: 1 },
    { kind: 'route-refresh' },
    { kind: 'four-octet-as', asn },
  ];
  return encodeMessage({ type: 'open', version: 4, myAs: asn > 0xffff ? 23456 : asn, holdTime, bgpId: routerId, capabilities });
}

/** An IPv4 prefix as the injector keeps it: address as an unsigned integer, and length. */
export interface V4Prefix {
  addr: number;
  len: number;
}

export function v4Text(p: V4Prefix): string {
  return `${formatIpv4Number(p.addr)}/${p.len}`;
}

/** The monitor's key for an IPv4 prefix (exact in a double: < 2^38). */
export function v4Key(addr: number, len: number): number {
  return addr * 64 + len;
}

/** The prefix a monitor key stands for (v4Key's inverse). */
export function v4OfKey(key: number): V4Prefix {
  return { addr: Math.floor(key / 64), len: key % 64 };
}

function nlriOctets(len: number): number {
  return 1 + ((len + 7) >> 3);
}

/** Splits prefixes into runs that each fit one message next to `fixed` octets of the rest. */
function* runs<P>(prefixes: readonly P[], fixed: number, lengthOf: (p: P) => number): Generator<P[]> {
  let run: P[] = [];
  let size = fixed;
  for (const p of prefixes) {
    const n = nlriOctets(lengthOf(p));
    if (size + n > MAX) {
      yield run;
      run = [];
      size = fixed;
    }
    run.push(p);
    size += n;
  }
  if (run.length > 0) yield run;
}

const v4Length = (p: V4Prefix) => p.len;

/** UPDATEs announcing `prefixes` with one attribute set, packed. */
export function announceUpdates(prefixes: readonly V4Prefix[], attributes: PathAttributes): Buffer[] {
  const fixed = encodeMessage({ type: 'update', withdrawn: [], attributes, nlri: [] }).length;
  const out: Buffer[] = [];
  for (const run of runs(prefixes, fixed, v4Length)) {
    out.push(encodeMessage({ type: 'update', withdrawn: [], attributes, nlri: run.map((p) => ({ prefix: v4Text(p) })) }));
  }
  return out;
}

/** UPDATEs withdrawing `prefixes`, packed. */
export function withdrawUpdates(prefixes: readonly V4Prefix[]): Buffer[] {
  const out: Buffer[] = [];
  for (const run of runs(prefixes, 23, v4Length)) {
    out.push(encodeMessage({ type: 'update', withdrawn: run.map((p) => ({ prefix: v4Text(p) })), attributes: {}, nlri: [] }));
  }
  return out;
}

/** An IPv6 prefix as the injector keeps it: its text, "2a00:0:1::/48". */
export type V6Prefix = string;

const v6Length = (p: V6Prefix) => Number(p.slice(p.indexOf('/') + 1));

/**
 * UPDATEs announcing IPv6 `prefixes` in MP_REACH_NLRI with `nextHop`, the other attributes
 * from `attributes`, packed.
 */
export function announceUpdatesV6(prefixes: readonly V6Prefix[], attributes: PathAttributes, nextHop: string): Buffer[] {
  const reach = (run: readonly V6Prefix[]): PathAttributes => ({
    ...attributes,
    mpReach: { afi: 2, safi: 1, nextHop, nlri: run.map((prefix) => ({ prefix })) },
  });
  // + 1: past 255 octets the MP attribute takes the extended (2-octet) length.
  const fixed = encodeMessage({ type: 'update', withdrawn: [], attributes: reach([]), nlri: [] }).length + 1;
  const out: Buffer[] = [];
  for (const run of runs(prefixes, fixed, v6Length))
    out.push(encodeMessage({ type: 'update', withdrawn: [], attributes: reach(run), nlri: [] }));
  return out;
}

/** UPDATEs withdrawing IPv6 `prefixes` in MP_UNREACH_NLRI, packed. */
export function withdrawUpdatesV6(prefixes: readonly V6Prefix[]): Buffer[] {
  const unreach = (run: readonly V6Prefix[]): PathAttributes => ({
    mpUnreach: { afi: 2, safi: 1, withdrawn: run.map((prefix) => ({ prefix })) },
  });
  const fixed = encodeMessage({ type: 'update', withdrawn: [], attributes: unreach([]), nlri: [] }).length + 1;
  const out: Buffer[] = [];
  for (const run of runs(prefixes, fixed, v6Length))
    out.push(encodeMessage({ type: 'update', withdrawn: [], attributes: unreach(run), nlri: [] }));
  return out;
}

/**
 * `count` consecutive /48s from `base`, the prefix's 48 bits as a number (exact in a double):
 * 0x2a00_0000_0000 is 2a00::/48.
 */
export function v6Range48(base: number, count: number): V6Prefix[] {
  const out: V6Prefix[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const v = base + i;
    const hex = (n: number) => n.toString(16);
    out[i] = `${hex(Math.floor(v / 2 ** 32))}:${hex(Math.floor(v / 2 ** 16) & 0xffff)}:${hex(v & 0xffff)}::/48`;
  }
  return out;
}

/**
 * The monitor's key for an IPv6 prefix: its length as one character, then its octets (the
 * bits past the length cleared) as latin1 characters. `p` is where the octets start in `b`.
 */
export function v6Key(b: Uint8Array, p: number, len: number): string {
  const n = (len + 7) >> 3;
  let key = String.fromCharCode(len);
  for (let i = 0; i < n; i++) {
    let octet = b[p + i]!;
    if (i === n - 1 && (len & 7) !== 0) octet &= (0xff << (8 - (len & 7))) & 0xff;
    key += String.fromCharCode(octet);
  }
  return key;
}

/** The monitor's key of an IPv6 prefix's text ("2001:db8::/32"). */
export function v6KeyOfText(text: string): string {
  const p = parsePrefix(text);
  return v6Key(p.bytes, 0, p.length);
}

/** The prefix text a monitor key stands for (v6KeyOfText's inverse). */
export function v6OfKey(key: string): V6Prefix {
  const octets = Buffer.alloc(16);
  for (let i = 1; i < key.length; i++) octets[i - 1] = key.charCodeAt(i);
  return `${formatIpv6(octets, 0)}/${key.charCodeAt(0)}`;
}

/** `count` consecutive /`len` prefixes from `base`. */
export function prefixRange(base: number, count: number, len = 32): V4Prefix[] {
  const step = 2 ** (32 - len);
  const out: V4Prefix[] = new Array(count);
  for (let i = 0; i < count; i++) out[i] = { addr: (base + i * step) >>> 0, len };
  return out;
}
