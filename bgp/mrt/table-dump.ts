// TABLE_DUMP_V2 (RFC 6396 §4.3, RFC 8050 for ADD-PATH): a route collector's RIB at one moment.
// A PEER_INDEX_TABLE names the peers; each RIB record that follows gives one prefix and, per
// peer that holds it, the path attributes, pointing into that table by index.
import { formatIpv4, formatIpv6 } from '../codec/address.js';
import { decodeAttributes, type Problem } from '../codec/attributes-decode.js';
import type { AddressFamily, PathAttributes } from '../codec/types.js';

export const TABLE_DUMP_V2 = 13;

/** TABLE_DUMP_V2 subtypes this reader decodes (the multicast and generic ones come back as 'other'). */
export const TableDumpSubtype = {
  PEER_INDEX_TABLE: 1,
  RIB_IPV4_UNICAST: 2,
  RIB_IPV6_UNICAST: 4,
  RIB_IPV4_UNICAST_ADDPATH: 8,
  RIB_IPV6_UNICAST_ADDPATH: 10,
} as const;

export interface MrtPeer {
  /** The peer's BGP identifier. */
  bgpId: string;
  address: string;
  asn: number;
}

export interface MrtRibEntry {
  peerIndex: number;
  /** The PEER_INDEX_TABLE entry the index points at (undefined when no table came first, or it is short). */
  peer: MrtPeer | undefined;
  /** When the route was received (seconds since the epoch). */
  originatedTime: number;
  /** The ADD-PATH identifier (the _ADDPATH subtypes only). */
  pathId?: number;
  attributes: PathAttributes;
  /** The next hop: NEXT_HOP, or the one MP_REACH_NLRI carries (IPv6 routes). */
  nextHop?: string;
  /** What the attribute decoder found wrong (RFC 7606 wording); the entry is kept as far as it decoded. */
  problems?: string[];
}

export interface MrtPeerIndexTable {
  kind: 'peer-index';
  timestamp: number;
  collectorId: string;
  viewName: string;
  peers: MrtPeer[];
}

export interface MrtRib {
  kind: 'rib';
  timestamp: number;
  family: AddressFamily;
  sequence: number;
  prefix: string;
  addPath: boolean;
  entries: MrtRibEntry[];
}

export class TableDumpError extends Error {
  override readonly name = 'TableDumpError';
}

const need = (ok: boolean, what: string): void => {
  if (!ok) throw new TableDumpError(what);
};

export function readPeerIndexTable(d: Buffer, p: number, end: number, timestamp: number): MrtPeerIndexTable {
  need(p + 6 <= end, 'PEER_INDEX_TABLE header cut short');
  const collectorId = formatIpv4(d, p);
  const nameLength = d.readUInt16BE(p + 4);
  p += 6;
  need(p + nameLength + 2 <= end, 'PEER_INDEX_TABLE view name cut short');
  const viewName = d.toString('utf8', p, p + nameLength);
  p += nameLength;
  const count = d.readUInt16BE(p);
  p += 2;
  const peers: MrtPeer[] = [];
  for (let i = 0; i < count; i++) {
    need(p + 1 <= end, `PEER_INDEX_TABLE peer ${i} cut short`);
    const type = d[p]!;
    const v6 = (type & 1) !== 0;
    const as4 = (type & 2) !== 0;
    const size = 1 + 4 + (v6 ? 16 : 4) + (as4 ? 4 : 2);
    need(p + size <= end, `PEER_INDEX_TABLE peer ${i} cut short`);
    const bgpId = formatIpv4(d, p + 1);
    const address = v6 ? formatIpv6(d, p + 5) : formatIpv4(d, p + 5);
    const a = p + 5 + (v6 ? 16 : 4);
    peers.push({ bgpId, address, asn: as4 ? d.readUInt32BE(a) : d.readUInt16BE(a) });
    p += size;
  }
  return { kind: 'peer-index', timestamp, collectorId, viewName, peers };
}

export function readRib(
  d: Buffer,
  p: number,
  end: number,
  timestamp: number,
  subtype: number,
  peers: readonly MrtPeer[] | undefined,
): MrtRib {
  const v6 = subtype === TableDumpSubtype.RIB_IPV6_UNICAST || subtype === TableDumpSubtype.RIB_IPV6_UNICAST_ADDPATH;
  const addPath = subtype === TableDumpSubtype.RIB_IPV4_UNICAST_ADDPATH || subtype === TableDumpSubtype.RIB_IPV6_UNICAST_ADDPATH;
  need(p + 5 <= end, 'RIB header cut short');
  const sequence = d.readUInt32BE(p);
  const length = d[p + 4]!;
  need(length <= (v6 ? 128 : 32), `RIB prefix length ${length}`);
  p += 5;
  const octets = (length + 7) >> 3;
  need(p + octets + 2 <= end, 'RIB prefix cut short');
  const bytes = Buffer.alloc(v6 ? 16 : 4);
  d.copy(bytes, 0, p, p + octets);
  const prefix = `${v6 ? formatIpv6(bytes, 0) : formatIpv4(bytes, 0)}/${length}`;
  p += octets;
  const count = d.readUInt16BE(p);
  p += 2;
  const entries: MrtRibEntry[] = [];
  for (let i = 0; i < count; i++) {
    const fixed = addPath ? 12 : 8;
    need(p + fixed <= end, `RIB entry ${i} cut short`);
    const peerIndex = d.readUInt16BE(p);
    const originatedTime = d.readUInt32BE(p + 2);
    const pathId = addPath ? d.readUInt32BE(p + 6) : undefined;
    const attrLength = d.readUInt16BE(p + fixed - 2);
    p += fixed;
    need(p + attrLength <= end, `RIB entry ${i} attributes overrun the record`);
    entries.push({
      peerIndex,
      peer: peers?.[peerIndex],
      originatedTime,
      ...(pathId !== undefined ? { pathId } : {}),
      ...ribAttributes(d.subarray(p, p + attrLength), v6),
    });
    p += attrLength;
  }
  return { kind: 'rib', timestamp, family: v6 ? 'ipv6-unicast' : 'ipv4-unicast', sequence, prefix, addPath, entries };
}

/**
 * A RIB entry's attributes. AS numbers are always 4 octets here, and MP_REACH_NLRI is usually
 * cut down to its next hop (§4.3.4: length, then address); that form is widened to the full
 * one so the UPDATE decoder reads it. A full MP_REACH_NLRI (AFI first, so a zero octet) is kept.
 */
function ribAttributes(raw: Buffer, v6: boolean): Pick<MrtRibEntry, 'attributes' | 'nextHop' | 'problems'> {
  const parts: Buffer[] = [];
  let p = 0;
  while (p + 3 <= raw.length) {
    const flags = raw[p]!;
    const type = raw[p + 1]!;
    const extended = (flags & 0x10) !== 0;
    const head = extended ? 4 : 3;
    if (p + head > raw.length) break;
    const length = extended ? raw.readUInt16BE(p + 2) : raw[p + 2]!;
    const vs = p + head;
    const ve = vs + length;
    if (ve > raw.length) break;
    if (type === 14 && length > 0 && raw[vs] !== 0 && raw[vs]! + 1 === length) {
      const value = Buffer.concat([Buffer.from([0, v6 ? 2 : 1, 1]), raw.subarray(vs, ve), Buffer.from([0])]);
      parts.push(Buffer.from([flags | 0x10, 14, value.length >> 8, value.length & 0xff]), value);
    } else parts.push(raw.subarray(p, ve));
    p = ve;
  }
  if (p < raw.length) parts.push(raw.subarray(p));
  const b = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  const problems: Problem[] = [];
  const attributes = decodeAttributes(b, 0, b.length, { fourOctetAs: true }, problems);
  delete attributes.wire;
  const nextHop = attributes.nextHop ?? attributes.mpReach?.nextHop;
  return {
    attributes,
    ...(nextHop !== undefined ? { nextHop } : {}),
    ...(problems.length ? { problems: problems.map((x) => x.message) } : {}),
  };
}
