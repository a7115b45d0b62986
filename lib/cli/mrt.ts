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

const USAGE = `usage: podroute mrt [-m [-l]] <file.mrt[.gz]>
  prints each record of an MRT dump (BGP4MP messages, TABLE_DUMP_V2 RIB entries) as a JSON line
  -m  one line per route as bgpdump -m prints it (TABLE_DUMP2, BGP4MP A/W/STATE)
  -l  with -m: the large communities field after the communities, as bgpdump -l
`;

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

/** `args`: the file and, when the caller did not parse them, -m and -l; `options` the same already parsed. */
export function mrtCommand(args: readonly string[], options: { bgpdump?: boolean; large?: boolean } = {}): number {
  const flags = new Set(args.filter((a) => a.startsWith('-')));
  if (options.bgpdump) flags.add('-m');
  if (options.large) flags.add('-l');
  const files = args.filter((a) => !a.startsWith('-'));
  const unknown = [...flags].filter((f) => f !== '-m' && f !== '-l' && f !== '-h' && f !== '--help');
  if (flags.has('-h') || flags.has('--help')) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (files.length !== 1 || unknown.length > 0 || (flags.has('-l') && !flags.has('-m'))) {
    if (unknown.length > 0) process.stderr.write(`podroute mrt: unknown option ${unknown[0]}\n`);
    process.stderr.write(USAGE);
    return 2;
  }
  const bgpdump = flags.has('-m');
  const large = flags.has('-l');
  let out = '';
  for (const r of readMrtFile(files[0]!)) {
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
