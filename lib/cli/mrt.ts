// `podroute mrt <file>`: the records of an MRT dump (RFC 6396), BGP4MP messages and
// TABLE_DUMP_V2 RIB entries, one JSON object a line; `-m` prints bgpdump's one-line form.
// Communities print as "65000:100" and large communities as "65000:1:2", as bgpdump and gobgp do.
import {
  BgpError,
  decodeMessage,
  formatCommunity,
  formatLargeCommunity,
  readMrtFile,
  type MrtRecord,
  type PathAttributes,
} from '../../bgp/index.js';
import { bgpdumpLines } from './mrt-bgpdump.js';

function replacer(key: string, value: unknown): unknown {
  // Buffers (raw attributes, extended communities, NOTIFICATION data) print as hex.
  if (
    value !== null &&
    typeof value === 'object' &&
    (value as { type?: unknown }).type === 'Buffer' &&
    Array.isArray((value as { data?: unknown }).data)
  ) {
    return Buffer.from((value as { data: number[] }).data).toString('hex');
  }
  if (key === 'communities' && Array.isArray(value) && value.every((c) => typeof c === 'number')) return value.map(formatCommunity);
  if (key === 'largeCommunities' && Array.isArray(value)) return (value as PathAttributes['largeCommunities'])!.map(formatLargeCommunity);
  return value;
}

function line(r: MrtRecord): object {
  if (r.kind === 'other') return { time: r.timestamp, mrtType: r.type, mrtSubtype: r.subtype, length: r.body.length };
  if (r.kind === 'peer-index')
    return { time: r.timestamp, peerIndexTable: { collectorId: r.collectorId, viewName: r.viewName, peers: r.peers } };
  if (r.kind === 'rib') {
    const entries = r.entries.map(({ peer, peerIndex, originatedTime, pathId, attributes, nextHop, problems }) => ({
      peer: peer?.address,
      peerAs: peer?.asn,
      peerIndex,
      originated: originatedTime,
      ...(pathId !== undefined ? { pathId } : {}),
      ...(nextHop !== undefined ? { nextHop } : {}),
      attributes,
      ...(problems ? { problems } : {}),
    }));
    return { time: r.timestamp, rib: { family: r.family, sequence: r.sequence, prefix: r.prefix, addPath: r.addPath, entries } };
  }
  const session = { time: r.timestamp, peer: r.peerIp, peerAs: r.peerAs, local: r.localIp, localAs: r.localAs };
  if (r.kind === 'state-change') return { ...session, stateChange: [r.oldState, r.newState] };
  try {
    return {
      ...session,
      message: decodeMessage(r.message, {
        fourOctetAs: r.fourOctetAs,
        addPath: r.addPath ? { 'ipv4-unicast': true, 'ipv6-unicast': true } : undefined,
      }),
    };
  } catch (e) {
    if (!(e instanceof BgpError)) throw e;
    return {
      ...session,
      error: { message: e.message, code: e.code, subcode: e.subcode, action: e.action },
      raw: r.message.toString('hex'),
    };
  }
}

/** Prints the records of one dump: JSON lines, or with bgpdump bgpdump's -m lines (large: its -l field too). */
export function mrtCommand(file: string, options: { bgpdump?: boolean; large?: boolean } = {}): number {
  const bgpdump = options.bgpdump === true;
  const large = options.large === true;
  let out = '';
  for (const r of readMrtFile(file)) {
    if (bgpdump) {
      for (const l of bgpdumpLines(r, { large })) out += `${l}\n`;
    } else out += `${JSON.stringify(line(r), replacer)}\n`;
    if (out.length > 1 << 16) {
      process.stdout.write(out);
      out = '';
    }
  }
  process.stdout.write(out);
  return 0;
}
