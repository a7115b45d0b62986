// Capabilities advertisement (RFC 5492) and the capabilities the speaker understands.
// A capability whose value does not read back to the same bytes (unknown code, or a
// malformed value) is kept raw, so that an OPEN always re-encodes unchanged.
import { CapabilityCode as C } from './constants.js';
import type { Capability } from './types.js';

export function decodeCapability(code: number, v: Buffer): Capability {
  let cap: Capability | undefined;
  try {
    cap = interpret(code, v);
  } catch {
    cap = undefined;
  }
  if (cap === undefined || !encodeCapabilityValue(cap).equals(v)) {
    return { kind: 'unknown', code, value: Buffer.from(v) };
  }
  return cap;
}

function interpret(code: number, v: Buffer): Capability | undefined {
  switch (code) {
    case C.MULTIPROTOCOL:
      return v.length === 4 ? { kind: 'multiprotocol', afi: v.readUInt16BE(0), safi: v[3] } : undefined;
    case C.ROUTE_REFRESH:
      return v.length === 0 ? { kind: 'route-refresh' } : undefined;
    case C.EXTENDED_MESSAGE:
      return v.length === 0 ? { kind: 'extended-message' } : undefined;
    case C.ENHANCED_ROUTE_REFRESH:
      return v.length === 0 ? { kind: 'enhanced-route-refresh' } : undefined;
    case C.FOUR_OCTET_AS:
      return v.length === 4 ? { kind: 'four-octet-as', asn: v.readUInt32BE(0) } : undefined;
    case C.EXTENDED_NEXT_HOP:
      return v.length % 6 === 0
        ? {
            kind: 'extended-next-hop',
            entries: records(v, 6, (o) => ({ afi: v.readUInt16BE(o), safi: v.readUInt16BE(o + 2), nextHopAfi: v.readUInt16BE(o + 4) })),
          }
        : undefined;
    case C.GRACEFUL_RESTART: {
      if (v.length < 2 || (v.length - 2) % 4 !== 0) return undefined;
      const word = v.readUInt16BE(0);
      const families = records(v.subarray(2), 4, (o) => ({ afi: v.readUInt16BE(2 + o), safi: v[4 + o], flags: v[5 + o] }));
      return { kind: 'graceful-restart', restartFlags: word >> 12, restartTime: word & 0xfff, families };
    }
    case C.ADD_PATH:
      return v.length % 4 === 0
        ? { kind: 'add-path', families: records(v, 4, (o) => ({ afi: v.readUInt16BE(o), safi: v[o + 2], mode: v[o + 3] })) }
        : undefined;
    case C.LONG_LIVED_GRACEFUL_RESTART:
      return v.length % 7 === 0
        ? {
            kind: 'long-lived-graceful-restart',
            families: records(v, 7, (o) => ({
              afi: v.readUInt16BE(o),
              safi: v[o + 2],
              flags: v[o + 3],
              staleTime: v.readUIntBE(o + 4, 3),
            })),
          }
        : undefined;
    case C.FQDN: {
      const hl = v[0];
      const dl = v[1 + hl];
      if (v.length < 2 || 2 + hl + dl !== v.length) return undefined;
      return { kind: 'fqdn', hostname: v.toString('utf8', 1, 1 + hl), domain: v.toString('utf8', 2 + hl, 2 + hl + dl) };
    }
    default:
      return undefined;
  }
}

function records<T>(v: Buffer, size: number, read: (offset: number) => T): T[] {
  const out: T[] = [];
  for (let o = 0; o + size <= v.length; o += size) out.push(read(o));
  return out;
}

export function capabilityCode(cap: Capability): number {
  switch (cap.kind) {
    case 'multiprotocol':
      return C.MULTIPROTOCOL;
    case 'route-refresh':
      return C.ROUTE_REFRESH;
    case 'extended-next-hop':
      return C.EXTENDED_NEXT_HOP;
    case 'extended-message':
      return C.EXTENDED_MESSAGE;
    case 'graceful-restart':
      return C.GRACEFUL_RESTART;
    case 'four-octet-as':
      return C.FOUR_OCTET_AS;
    case 'add-path':
      return C.ADD_PATH;
    case 'enhanced-route-refresh':
      return C.ENHANCED_ROUTE_REFRESH;
    case 'long-lived-graceful-restart':
      return C.LONG_LIVED_GRACEFUL_RESTART;
    case 'fqdn':
      return C.FQDN;
    case 'unknown':
      return cap.code;
  }
}

export function encodeCapabilityValue(cap: Capability): Buffer {
  switch (cap.kind) {
    case 'multiprotocol': {
      const b = Buffer.alloc(4);
      b.writeUInt16BE(cap.afi, 0);
      b[3] = cap.safi;
      return b;
    }
    case 'route-refresh':
    case 'extended-message':
    case 'enhanced-route-refresh':
      return Buffer.alloc(0);
    case 'four-octet-as': {
      const b = Buffer.alloc(4);
      b.writeUInt32BE(cap.asn, 0);
      return b;
    }
    case 'extended-next-hop': {
      const b = Buffer.alloc(6 * cap.entries.length);
      cap.entries.forEach((e, i) => {
        b.writeUInt16BE(e.afi, 6 * i);
        b.writeUInt16BE(e.safi, 6 * i + 2);
        b.writeUInt16BE(e.nextHopAfi, 6 * i + 4);
      });
      return b;
    }
    case 'graceful-restart': {
      const b = Buffer.alloc(2 + 4 * cap.families.length);
      b.writeUInt16BE(((cap.restartFlags & 0xf) << 12) | (cap.restartTime & 0xfff), 0);
      cap.families.forEach((f, i) => {
        b.writeUInt16BE(f.afi, 2 + 4 * i);
        b[4 + 4 * i] = f.safi;
        b[5 + 4 * i] = f.flags;
      });
      return b;
    }
    case 'add-path': {
      const b = Buffer.alloc(4 * cap.families.length);
      cap.families.forEach((f, i) => {
        b.writeUInt16BE(f.afi, 4 * i);
        b[4 * i + 2] = f.safi;
        b[4 * i + 3] = f.mode;
      });
      return b;
    }
    case 'long-lived-graceful-restart': {
      const b = Buffer.alloc(7 * cap.families.length);
      cap.families.forEach((f, i) => {
        b.writeUInt16BE(f.afi, 7 * i);
        b[7 * i + 2] = f.safi;
        b[7 * i + 3] = f.flags;
        b.writeUIntBE(f.staleTime, 7 * i + 4, 3);
      });
      return b;
    }
    case 'fqdn': {
      const host = Buffer.from(cap.hostname, 'utf8');
      const domain = Buffer.from(cap.domain, 'utf8');
      if (host.length > 255 || domain.length > 255)
        throw new RangeError('FQDN capability: hostname and domain are at most 255 octets each');
      return Buffer.concat([Buffer.from([host.length]), host, Buffer.from([domain.length]), domain]);
    }
    case 'unknown':
      return cap.value;
  }
}
