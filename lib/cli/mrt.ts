// `podroute mrt <file>`: the BGP messages of an MRT dump (RFC 6396), one JSON object a line.
import { BgpError, decodeMessage, readMrtFile, type MrtRecord } from '../../bgp/index.js';

function replacer(_key: string, value: unknown): unknown {
  // Buffers (raw attributes, extended communities, NOTIFICATION data) print as hex.
  if (
    value !== null &&
    typeof value === 'object' &&
    (value as { type?: unknown }).type === 'Buffer' &&
    Array.isArray((value as { data?: unknown }).data)
  ) {
    return Buffer.from((value as { data: number[] }).data).toString('hex');
  }
  return value;
}

function line(r: MrtRecord): object {
  if (r.kind === 'other') return { time: r.timestamp, mrtType: r.type, mrtSubtype: r.subtype, length: r.body.length };
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

export function mrtCommand(args: string[]): number {
  const [file] = args;
  if (!file) {
    process.stderr.write('usage: podroute mrt <file.mrt[.gz]>\n  prints each BGP message of an MRT dump as a JSON line\n');
    return 2;
  }
  let out = '';
  for (const r of readMrtFile(file)) {
    out += JSON.stringify(line(r), replacer) + '\n';
    if (out.length > 1 << 16) {
      process.stdout.write(out);
      out = '';
    }
  }
  process.stdout.write(out);
  return 0;
}
