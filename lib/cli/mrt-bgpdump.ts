// `podroute mrt -m`: one line per route as `bgpdump -m` prints it, so a dump can be diffed against
// bgpdump's own reading: TABLE_DUMP2 lines for RIB entries, BGP4MP A/W lines for UPDATEs and
// STATE lines for session changes. Communities print as aa:nn (well-known ones too, as bgpdump),
// large communities (with -l) as a:b:c in a field of their own after them.
import {
  decodeMessage,
  formatCommunity,
  formatLargeCommunity,
  type AsPathSegment,
  type MrtRecord,
  type PathAttributes,
} from '../../bgp/index.js';

export interface BgpdumpOptions {
  /** bgpdump's -l: the large communities field after the communities. */
  large?: boolean;
}

const ORIGIN: Readonly<Record<string, string>> = { igp: 'IGP', egp: 'EGP', incomplete: 'INCOMPLETE' };

function asPath(segments: readonly AsPathSegment[] | undefined): string {
  return (segments ?? [])
    .map((s) => {
      if (s.type === 'sequence') return s.asns.join(' ');
      if (s.type === 'set') return `{${s.asns.join(',')}}`;
      if (s.type === 'confed-sequence') return `(${s.asns.join(' ')})`;
      return `[${s.asns.join(',')}]`;
    })
    .join(' ');
}

/** The fields after the prefix: AS path, origin, next hop, local pref, MED, communities, [large,] atomic, aggregator. */
function attributeFields(a: PathAttributes, nextHop: string, o: BgpdumpOptions): string[] {
  const fields = [
    asPath(a.asPath),
    a.origin ? ORIGIN[a.origin]! : '',
    nextHop,
    String(a.localPref ?? 0),
    String(a.med ?? 0),
    (a.communities ?? []).map(formatCommunity).join(' '),
  ];
  if (o.large) fields.push((a.largeCommunities ?? []).map(formatLargeCommunity).join(' '));
  fields.push(a.atomicAggregate ? 'AG' : 'NAG', a.aggregator ? `${a.aggregator.asn} ${a.aggregator.address}` : '');
  return fields;
}

export function bgpdumpLines(r: MrtRecord, o: BgpdumpOptions = {}): string[] {
  if (r.kind === 'rib') {
    // RFC 8050 records print as bgpdump does: TABLE_DUMP2_AP, the path identifier after the prefix.
    const type = r.addPath ? 'TABLE_DUMP2_AP' : 'TABLE_DUMP2';
    return r.entries.map((e) =>
      [
        type,
        r.timestamp,
        'B',
        e.peer?.address ?? '',
        e.peer?.asn ?? '',
        r.prefix,
        ...(r.addPath ? [e.pathId ?? 0] : []),
        ...attributeFields(e.attributes, e.nextHop ?? '', o),
        '',
      ].join('|'),
    );
  }
  if (r.kind === 'state-change') return [['BGP4MP', r.timestamp, 'STATE', r.peerIp, r.peerAs, r.oldState, r.newState].join('|')];
  if (r.kind !== 'message') return [];
  let m: ReturnType<typeof decodeMessage>;
  try {
    m = decodeMessage(r.message, {
      fourOctetAs: r.fourOctetAs,
      addPath: r.addPath ? { 'ipv4-unicast': true, 'ipv6-unicast': true } : undefined,
    });
  } catch {
    return [];
  }
  if (m.type !== 'update') return [];
  const head = [r.addPath ? 'BGP4MP_AP' : 'BGP4MP', r.timestamp];
  const id = (n: { pathId?: number }) => (r.addPath ? [n.pathId ?? 0] : []);
  const out: string[] = [];
  const a = m.attributes;
  for (const n of [...m.withdrawn, ...(a.mpUnreach?.withdrawn ?? [])])
    out.push([...head, 'W', r.peerIp, r.peerAs, n.prefix, ...id(n)].join('|'));
  for (const n of m.nlri)
    out.push([...head, 'A', r.peerIp, r.peerAs, n.prefix, ...id(n), ...attributeFields(a, a.nextHop ?? '', o), ''].join('|'));
  for (const n of a.mpReach?.nlri ?? [])
    out.push([...head, 'A', r.peerIp, r.peerAs, n.prefix, ...id(n), ...attributeFields(a, a.mpReach?.nextHop ?? '', o), ''].join('|'));
  return out;
}
