// Pre-encoded BGP traffic for the injector: OPEN, KEEPALIVE, and UPDATEs packed with as many
// prefixes as fit one 4096-octet message, built once with our own codec before the clock starts.
import { encodeMessage, type Capability, type PathAttributes } from '../../bgp/codec/index.js';

export const KEEPALIVE = encodeMessage({ type: 'keepalive' });
/** Community that carries a scenario's round number to the monitor (64999:round). */
export const TAG_ASN = 64999;
export const NO_EXPORT = 0xffffff01;
const MAX = 4096;

export function openMessage(asn: number, routerId: string, holdTime: number): Buffer {
  const capabilities: Capability[] = [
    { kind: 'multiprotocol', afi: 1, safi: 1 },
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
  const a = p.addr;
  return `${a >>> 24}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}/${p.len}`;
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
function* runs(prefixes: readonly V4Prefix[], fixed: number): Generator<V4Prefix[]> {
  let run: V4Prefix[] = [];
  let size = fixed;
  for (const p of prefixes) {
    const n = nlriOctets(p.len);
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

/** UPDATEs announcing `prefixes` with one attribute set, packed. */
export function announceUpdates(prefixes: readonly V4Prefix[], attributes: PathAttributes): Buffer[] {
  const fixed = encodeMessage({ type: 'update', withdrawn: [], attributes, nlri: [] }).length;
  const out: Buffer[] = [];
  for (const run of runs(prefixes, fixed)) {
    out.push(encodeMessage({ type: 'update', withdrawn: [], attributes, nlri: run.map((p) => ({ prefix: v4Text(p) })) }));
  }
  return out;
}

/** UPDATEs withdrawing `prefixes`, packed. */
export function withdrawUpdates(prefixes: readonly V4Prefix[]): Buffer[] {
  const out: Buffer[] = [];
  for (const run of runs(prefixes, 23)) {
    out.push(encodeMessage({ type: 'update', withdrawn: run.map((p) => ({ prefix: v4Text(p) })), attributes: {}, nlri: [] }));
  }
  return out;
}

/** `count` consecutive /`len` prefixes from `base`. */
export function prefixRange(base: number, count: number, len = 32): V4Prefix[] {
  const step = 2 ** (32 - len);
  const out: V4Prefix[] = new Array(count);
  for (let i = 0; i < count; i++) out[i] = { addr: (base + i * step) >>> 0, len };
  return out;
}

export function ipv4ToInt(text: string): number {
  const [a, b, c, d] = text.split('.').map(Number);
  return ((a! << 24) | (b! << 16) | (c! << 8) | d!) >>> 0;
}
