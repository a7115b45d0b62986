// A flow's identity as conntrack and a logged packet both give it: protocol, addresses, ports
// (for ICMP, its type and code in the port fields, as conntrack keys them).

export interface FlowTuple {
  /** IP protocol number: 6 tcp, 17 udp, 132 sctp, 1 icmp, 58 icmpv6. */
  readonly proto: number;
  readonly src: string;
  readonly dst: string;
  readonly sport: number;
  readonly dport: number;
}

const NAMES: Readonly<Record<number, string>> = { 1: 'icmp', 6: 'tcp', 17: 'udp', 58: 'icmpv6', 132: 'sctp' };

/** `tcp`, `udp`, … or the number for a protocol without a name here. */
export function protocolName(proto: number): string {
  return NAMES[proto] ?? String(proto);
}

/** One string per flow direction, for maps keyed by tuple. */
export function tupleKey(t: FlowTuple): string {
  return `${t.proto} ${t.src} ${t.sport} ${t.dst} ${t.dport}`;
}
