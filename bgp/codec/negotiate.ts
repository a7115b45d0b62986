// What two OPENs agree on, as the codec needs it for each direction of the session.
import { familyOf } from './family.js';
import type { AddressFamily, Capability, CapabilityKind, CodecOptions, OpenMessage } from './types.js';

export function findCapability<K extends CapabilityKind>(open: OpenMessage, kind: K): Extract<Capability, { kind: K }> | undefined {
  return open.capabilities.find((c) => c.kind === kind) as Extract<Capability, { kind: K }> | undefined;
}

/** The sender's AS: from the 4-octet AS capability when present, else My Autonomous System. */
export function openAs(open: OpenMessage): number {
  return findCapability(open, 'four-octet-as')?.asn ?? open.myAs;
}

/** The unicast families both OPENs list with the multiprotocol capability (IPv4 when neither lists any, RFC 4760 §8). */
export function commonFamilies(a: OpenMessage, b: OpenMessage): AddressFamily[] {
  const of = (o: OpenMessage) => {
    const mp = o.capabilities.filter((c) => c.kind === 'multiprotocol');
    if (mp.length === 0) return new Set<AddressFamily>(['ipv4-unicast']);
    return new Set(mp.map((c) => familyOf(c.afi, c.safi)).filter((f): f is AddressFamily => f !== undefined));
  };
  const fa = of(a);
  const fb = of(b);
  return [...fa].filter((f) => fb.has(f));
}

function addPathModes(open: OpenMessage): Map<AddressFamily, number> {
  const modes = new Map<AddressFamily, number>();
  for (const f of findCapability(open, 'add-path')?.families ?? []) {
    const family = familyOf(f.afi, f.safi);
    if (family) modes.set(family, f.mode);
  }
  return modes;
}

export interface NegotiatedOptions {
  /** How to encode what we send. */
  send: CodecOptions;
  /** How to decode what we receive. */
  receive: CodecOptions;
  families: AddressFamily[];
}

/** RFC 6793 (4-octet AS), RFC 8654 (extended messages), RFC 7911 (ADD-PATH per family and direction). */
export function negotiatedOptions(local: OpenMessage, remote: OpenMessage): NegotiatedOptions {
  const fourOctetAs = findCapability(local, 'four-octet-as') !== undefined && findCapability(remote, 'four-octet-as') !== undefined;
  const extendedMessage =
    findCapability(local, 'extended-message') !== undefined && findCapability(remote, 'extended-message') !== undefined;
  const families = commonFamilies(local, remote);
  const mine = addPathModes(local);
  const theirs = addPathModes(remote);
  const send: Partial<Record<AddressFamily, boolean>> = {};
  const receive: Partial<Record<AddressFamily, boolean>> = {};
  for (const f of families) {
    const m = mine.get(f) ?? 0;
    const t = theirs.get(f) ?? 0;
    if (m & 2 && t & 1) send[f] = true;
    if (m & 1 && t & 2) receive[f] = true;
  }
  return {
    send: { fourOctetAs, extendedMessage, addPath: send },
    receive: { fourOctetAs, extendedMessage, addPath: receive },
    families,
  };
}
