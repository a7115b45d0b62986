// Protocols as policies write them (Calico's "TCP", "ICMPv6", "UDPLite" or a number; Kubernetes'
// "TCP", "UDP", "SCTP") and as felix's contract takes them (lower case names, or a number).
import type { Protocol } from '../../felix/policy/input.js';
import { PolicyConversionError } from './model.js';

const NUMBERS: Readonly<Record<string, number>> = { icmp: 1, tcp: 6, udp: 17, icmpv6: 58, udplite: 136, sctp: 132 };
const NAMED: readonly Protocol[] = ['tcp', 'udp', 'sctp', 'icmp', 'icmpv6'];

/** The contract's form of a protocol given by name (any case) or number. */
export function toProtocol(p: string | number, field: string): Protocol {
  if (typeof p === 'number') {
    if (!Number.isInteger(p) || p < 0 || p > 255) throw new PolicyConversionError(field, `protocol ${p} is not 0..255`);
    return p;
  }
  const lower = p.toLowerCase();
  if ((NAMED as readonly string[]).includes(lower)) return lower as Protocol;
  const n = NUMBERS[lower];
  if (n !== undefined) return n;
  if (/^\d+$/.test(p)) return toProtocol(Number(p), field);
  throw new PolicyConversionError(field, `unknown protocol '${p}'`);
}

/** The IP protocol number, so that 'tcp' and 6 compare equal. */
export function protocolNumber(p: Protocol): number {
  return typeof p === 'number' ? p : NUMBERS[p]!;
}

/** The protocols on which ports (numeric or named) mean something. */
export function portProtocol(p: Protocol | undefined): 'tcp' | 'udp' | 'sctp' | undefined {
  if (p === undefined) return undefined;
  const n = protocolNumber(p);
  return n === 6 ? 'tcp' : n === 17 ? 'udp' : n === 132 ? 'sctp' : undefined;
}
