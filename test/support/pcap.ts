// Reads a libpcap file (what `dumpcap -P` / `tshark -F pcap -w` write) and reassembles every
// TCP connection in it into its two byte streams, ordered by sequence number, with
// retransmitted and overlapping segments folded in and gaps reported, never papered over.
import { readFileSync } from 'node:fs';

export interface PcapPacket {
  /** Microseconds since the epoch. */
  timeUs: number;
  linkType: number;
  data: Buffer;
}

const LINKTYPE_ETHERNET = 1;
const LINKTYPE_LINUX_SLL = 113;
const LINKTYPE_RAW = 101;

/** `partial`: the file is still being written; a cut-off last record is dropped, not an error. */
export function readPcap(file: string, options: { partial?: boolean } = {}): PcapPacket[] {
  return parsePcap(readFileSync(file), file, options);
}

export function parsePcap(b: Buffer, name = 'pcap', options: { partial?: boolean } = {}): PcapPacket[] {
  if (options.partial && b.length < 24) return [];
  if (b.length < 24) throw new Error(`${name}: ${b.length} bytes is too short for a pcap header`);
  const magic = b.readUInt32LE(0);
  let little: boolean;
  let nano: boolean;
  if (magic === 0xa1b2c3d4 || magic === 0xa1b23c4d) [little, nano] = [true, magic === 0xa1b23c4d];
  else if (b.readUInt32BE(0) === 0xa1b2c3d4 || b.readUInt32BE(0) === 0xa1b23c4d) [little, nano] = [false, b.readUInt32BE(0) === 0xa1b23c4d];
  else throw new Error(`${name}: magic 0x${magic.toString(16)} is not libpcap (pcapng? write with -F pcap / dumpcap -P)`);
  const u32 = (at: number): number => (little ? b.readUInt32LE(at) : b.readUInt32BE(at));
  const linkType = u32(20) & 0x0fffffff;
  const packets: PcapPacket[] = [];
  let pos = 24;
  while (pos + 16 <= b.length) {
    const sec = u32(pos);
    const frac = u32(pos + 4);
    const included = u32(pos + 8);
    const original = u32(pos + 12);
    pos += 16;
    if (pos + included > b.length && options.partial) break;
    if (pos + included > b.length) throw new Error(`${name}: record at ${pos - 16} runs past the end of the file (truncated capture?)`);
    if (included < original) throw new Error(`${name}: packet at ${pos - 16} was cut to ${included} of ${original} bytes (snap length)`);
    packets.push({ timeUs: sec * 1e6 + (nano ? Math.floor(frac / 1000) : frac), linkType, data: b.subarray(pos, pos + included) });
    pos += included;
  }
  return packets;
}

export interface TcpSegment {
  timeUs: number;
  src: string;
  dst: string;
  srcPort: number;
  dstPort: number;
  seq: number;
  ack: number;
  flags: { syn: boolean; ack: boolean; fin: boolean; rst: boolean };
  payload: Buffer;
}

/** The TCP segment in a captured frame, or undefined for anything that is not TCP over IP. */
export function tcpSegment(packet: PcapPacket): TcpSegment | undefined {
  const d = packet.data;
  let ip: number;
  let etherType: number;
  if (packet.linkType === LINKTYPE_ETHERNET) {
    etherType = d.readUInt16BE(12);
    ip = 14;
    if (etherType === 0x8100) [etherType, ip] = [d.readUInt16BE(16), 18];
  } else if (packet.linkType === LINKTYPE_LINUX_SLL) {
    etherType = d.readUInt16BE(14);
    ip = 16;
  } else if (packet.linkType === LINKTYPE_RAW) {
    etherType = d[0]! >> 4 === 6 ? 0x86dd : 0x0800;
    ip = 0;
  } else {
    throw new Error(`pcap link type ${packet.linkType} is not handled (Ethernet, Linux cooked or raw IP)`);
  }
  let src: string;
  let dst: string;
  let tcp: number;
  let end: number;
  if (etherType === 0x0800) {
    if (d[ip + 9] !== 6) return undefined;
    const headerLength = (d[ip]! & 0x0f) * 4;
    // The IP total length, not the frame length: short frames carry Ethernet padding.
    end = ip + d.readUInt16BE(ip + 2);
    src = [...d.subarray(ip + 12, ip + 16)].join('.');
    dst = [...d.subarray(ip + 16, ip + 20)].join('.');
    tcp = ip + headerLength;
  } else if (etherType === 0x86dd) {
    if (d[ip + 6] !== 6) return undefined; // extension headers do not occur on our BGP sessions
    end = ip + 40 + d.readUInt16BE(ip + 4);
    src = formatIpv6(d.subarray(ip + 8, ip + 24));
    dst = formatIpv6(d.subarray(ip + 24, ip + 40));
    tcp = ip + 40;
  } else {
    return undefined;
  }
  const dataOffset = (d[tcp + 12]! >> 4) * 4;
  const flagByte = d[tcp + 13]!;
  return {
    timeUs: packet.timeUs,
    src,
    dst,
    srcPort: d.readUInt16BE(tcp),
    dstPort: d.readUInt16BE(tcp + 2),
    seq: d.readUInt32BE(tcp + 4),
    ack: d.readUInt32BE(tcp + 8),
    flags: { fin: (flagByte & 1) !== 0, syn: (flagByte & 2) !== 0, rst: (flagByte & 4) !== 0, ack: (flagByte & 16) !== 0 },
    payload: d.subarray(tcp + dataOffset, end),
  };
}

function formatIpv6(bytes: Buffer): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i).toString(16));
  // Compress the longest run of zero groups, as inet_ntop does.
  let best = { at: -1, len: 0 };
  for (let i = 0; i < 8; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > best.len && j - i > 1) best = { at: i, len: j - i };
    i = j;
  }
  if (best.at < 0) return groups.join(':');
  return `${groups.slice(0, best.at).join(':')}::${groups.slice(best.at + best.len).join(':')}`;
}

export interface Endpoint {
  address: string;
  port: number;
}

/** One direction of a connection, reassembled. */
export interface TcpStream {
  from: Endpoint;
  to: Endpoint;
  bytes: Buffer;
  /** Holes in the sequence space (bytes never captured): reassembly is only exact when empty. */
  gaps: { offset: number; length: number }[];
  /** Segments whose bytes were all seen already (retransmits), and overlapping ones trimmed. */
  retransmits: number;
  /** The sender closed with FIN or RST. */
  closed: 'fin' | 'rst' | undefined;
}

export interface TcpConnection {
  /** The side that sent the SYN. */
  client: Endpoint;
  server: Endpoint;
  clientToServer: TcpStream;
  serverToClient: TcpStream;
  startUs: number;
}

interface Builder {
  isn: number | undefined;
  segments: { offset: number; payload: Buffer }[];
  closed: 'fin' | 'rst' | undefined;
  from: Endpoint;
  to: Endpoint;
}

const key = (a: string, ap: number, b: string, bp: number): string => `${a}|${ap}|${b}|${bp}`;

/**
 * Groups segments into connections (a SYN on a 4-tuple starts a new one) and reassembles
 * each direction. A connection whose SYN was not captured is skipped: its stream would not
 * start at a message boundary.
 */
export function reassembleTcp(segments: Iterable<TcpSegment>): TcpConnection[] {
  const connections: { connection: TcpConnection; builders: [Builder, Builder] }[] = [];
  const byTuple = new Map<string, { builders: [Builder, Builder]; clientKey: string }>();
  for (const s of segments) {
    const forward = key(s.src, s.srcPort, s.dst, s.dstPort);
    const backward = key(s.dst, s.dstPort, s.src, s.srcPort);
    if (s.flags.syn && !s.flags.ack) {
      const existing = byTuple.get(forward);
      // A retransmitted SYN carries the same ISN and belongs to the same connection.
      if (existing && existing.clientKey === forward && existing.builders[0].isn === s.seq) continue;
      const from = { address: s.src, port: s.srcPort };
      const to = { address: s.dst, port: s.dstPort };
      const builders: [Builder, Builder] = [
        { isn: s.seq, segments: [], closed: undefined, from, to },
        { isn: undefined, segments: [], closed: undefined, from: to, to: from },
      ];
      const entry = { builders, clientKey: forward };
      byTuple.set(forward, entry);
      byTuple.set(backward, entry);
      connections.push({
        builders,
        connection: { client: from, server: to, startUs: s.timeUs, clientToServer: undefined!, serverToClient: undefined! },
      });
      continue;
    }
    const entry = byTuple.get(forward);
    if (!entry) continue;
    const builder = entry.clientKey === forward ? entry.builders[0] : entry.builders[1];
    if (s.flags.syn) {
      builder.isn ??= s.seq;
      continue;
    }
    if (builder.isn === undefined) continue;
    if (s.payload.length > 0) builder.segments.push({ offset: (s.seq - builder.isn - 1) >>> 0, payload: s.payload });
    if (s.flags.rst) builder.closed = 'rst';
    else if (s.flags.fin) builder.closed ??= 'fin';
  }
  return connections.map(({ connection, builders }) => ({
    ...connection,
    clientToServer: assemble(builders[0]),
    serverToClient: assemble(builders[1]),
  }));
}

function assemble(builder: Builder): TcpStream {
  const ordered = [...builder.segments].sort((a, b) => a.offset - b.offset);
  const parts: Buffer[] = [];
  const gaps: { offset: number; length: number }[] = [];
  let next = 0;
  let retransmits = 0;
  for (const { offset, payload } of ordered) {
    const end = offset + payload.length;
    if (end <= next) {
      retransmits++;
      continue;
    }
    if (offset > next) gaps.push({ offset: next, length: offset - next });
    else if (offset < next) retransmits++;
    parts.push(payload.subarray(Math.max(0, next - offset)));
    next = end;
  }
  return { from: builder.from, to: builder.to, bytes: Buffer.concat(parts), gaps, retransmits, closed: builder.closed };
}

/** Every TCP connection in a pcap file. */
export function readTcpConnections(file: string, options: { partial?: boolean } = {}): TcpConnection[] {
  const segments: TcpSegment[] = [];
  for (const packet of readPcap(file, options)) {
    const segment = tcpSegment(packet);
    if (segment) segments.push(segment);
  }
  return reassembleTcp(segments);
}
