// A reader of MRT dumps (RFC 6396) as route collectors publish them: BGP4MP traffic (each
// record a BGP message as it crossed a session, with the session's endpoints) and
// TABLE_DUMP_V2 RIB snapshots (table-dump.ts).
import { gunzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { formatIpv4, formatIpv6 } from '../codec/address.js';
import {
  readPeerIndexTable,
  readRib,
  TABLE_DUMP_V2,
  TableDumpError,
  TableDumpSubtype,
  type MrtPeer,
  type MrtPeerIndexTable,
  type MrtRib,
} from './table-dump.js';

const BGP4MP = 16;
const BGP4MP_ET = 17;

/** BGP4MP subtypes (RFC 6396 §4.4, RFC 8050 for ADD-PATH). */
const Subtype = {
  STATE_CHANGE: 0,
  MESSAGE: 1,
  MESSAGE_AS4: 4,
  STATE_CHANGE_AS4: 5,
  MESSAGE_LOCAL: 6,
  MESSAGE_AS4_LOCAL: 7,
  MESSAGE_ADDPATH: 8,
  MESSAGE_AS4_ADDPATH: 9,
  MESSAGE_LOCAL_ADDPATH: 10,
  MESSAGE_AS4_LOCAL_ADDPATH: 11,
} as const;

export interface MrtSession {
  peerAs: number;
  localAs: number;
  ifIndex: number;
  peerIp: string;
  localIp: string;
}

export type MrtRecord =
  | ({
      kind: 'message';
      timestamp: number;
      /** The whole BGP message, header included. */
      message: Buffer;
      /** Whether the session's AS numbers are 4 octets (the AS4 subtypes). */
      fourOctetAs: boolean;
      /** Whether NLRI carry path identifiers (the ADDPATH subtypes). */
      addPath: boolean;
    } & MrtSession)
  | ({ kind: 'state-change'; timestamp: number; oldState: number; newState: number } & MrtSession)
  | MrtPeerIndexTable
  | MrtRib
  | { kind: 'other'; timestamp: number; type: number; subtype: number; body: Buffer };

export class MrtFormatError extends Error {
  override readonly name = 'MrtFormatError';
}

/** Reads a whole file (gzip or plain) and yields its records in order. */
export function* readMrtFile(path: string): Generator<MrtRecord> {
  let data = readFileSync(path);
  if (data[0] === 0x1f && data[1] === 0x8b) data = gunzipSync(data);
  yield* readMrt(data);
}

export function* readMrt(data: Buffer): Generator<MrtRecord> {
  let pos = 0;
  // The last PEER_INDEX_TABLE: the RIB records after it name their peers by index into it.
  let peers: MrtPeer[] | undefined;
  while (pos < data.length) {
    if (pos + 12 > data.length) throw new MrtFormatError(`record header cut short at offset ${pos}`);
    const timestamp = data.readUInt32BE(pos);
    const type = data.readUInt16BE(pos + 4);
    const subtype = data.readUInt16BE(pos + 6);
    const length = data.readUInt32BE(pos + 8);
    let body = pos + 12;
    const end = body + length;
    if (end > data.length) throw new MrtFormatError(`record at offset ${pos} overruns the file`);
    pos = end;
    if (type === BGP4MP_ET) body += 4; // microseconds
    if (type === TABLE_DUMP_V2) {
      const record = readTableDump(data, body, end, timestamp, subtype, peers);
      if (record?.kind === 'peer-index') peers = record.peers;
      yield record ?? { kind: 'other', timestamp, type, subtype, body: data.subarray(body, end) };
      continue;
    }
    if (type !== BGP4MP && type !== BGP4MP_ET) {
      yield { kind: 'other', timestamp, type, subtype, body: data.subarray(body, end) };
      continue;
    }
    const record = readBgp4mp(data, body, end, timestamp, subtype);
    yield record ?? { kind: 'other', timestamp, type, subtype, body: data.subarray(body, end) };
  }
}

function readBgp4mp(d: Buffer, p: number, end: number, timestamp: number, subtype: number): MrtRecord | undefined {
  const as4 =
    subtype === Subtype.MESSAGE_AS4 ||
    subtype === Subtype.STATE_CHANGE_AS4 ||
    subtype === Subtype.MESSAGE_AS4_LOCAL ||
    subtype === Subtype.MESSAGE_AS4_ADDPATH ||
    subtype === Subtype.MESSAGE_AS4_LOCAL_ADDPATH;
  const known =
    as4 ||
    subtype === Subtype.MESSAGE ||
    subtype === Subtype.STATE_CHANGE ||
    subtype === Subtype.MESSAGE_LOCAL ||
    subtype === Subtype.MESSAGE_ADDPATH ||
    subtype === Subtype.MESSAGE_LOCAL_ADDPATH;
  if (!known) return undefined;
  const asLen = as4 ? 4 : 2;
  if (p + 2 * asLen + 4 > end) throw new MrtFormatError('BGP4MP header cut short');
  const peerAs = as4 ? d.readUInt32BE(p) : d.readUInt16BE(p);
  const localAs = as4 ? d.readUInt32BE(p + asLen) : d.readUInt16BE(p + asLen);
  p += 2 * asLen;
  const ifIndex = d.readUInt16BE(p);
  const afi = d.readUInt16BE(p + 2);
  p += 4;
  const ipLen = afi === 2 ? 16 : 4;
  if (p + 2 * ipLen > end) throw new MrtFormatError('BGP4MP addresses cut short');
  const fmt = afi === 2 ? formatIpv6 : formatIpv4;
  const peerIp = fmt(d, p);
  const localIp = fmt(d, p + ipLen);
  p += 2 * ipLen;
  const session = { peerAs, localAs, ifIndex, peerIp, localIp };
  if (subtype === Subtype.STATE_CHANGE || subtype === Subtype.STATE_CHANGE_AS4) {
    if (p + 4 > end) throw new MrtFormatError('BGP4MP state change cut short');
    return { kind: 'state-change', timestamp, oldState: d.readUInt16BE(p), newState: d.readUInt16BE(p + 2), ...session };
  }
  const addPath = subtype >= Subtype.MESSAGE_ADDPATH;
  return { kind: 'message', timestamp, message: d.subarray(p, end), fourOctetAs: as4, addPath, ...session };
}

function readTableDump(
  d: Buffer,
  p: number,
  end: number,
  timestamp: number,
  subtype: number,
  peers: MrtPeer[] | undefined,
): MrtPeerIndexTable | MrtRib | undefined {
  try {
    if (subtype === TableDumpSubtype.PEER_INDEX_TABLE) return readPeerIndexTable(d, p, end, timestamp);
    if (
      subtype === TableDumpSubtype.RIB_IPV4_UNICAST ||
      subtype === TableDumpSubtype.RIB_IPV6_UNICAST ||
      subtype === TableDumpSubtype.RIB_IPV4_UNICAST_ADDPATH ||
      subtype === TableDumpSubtype.RIB_IPV6_UNICAST_ADDPATH
    )
      return readRib(d, p, end, timestamp, subtype, peers);
    return undefined;
  } catch (e) {
    if (e instanceof TableDumpError) throw new MrtFormatError(`TABLE_DUMP_V2 subtype ${subtype}: ${e.message}`);
    throw e;
  }
}
