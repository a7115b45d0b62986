// The BFD Control packet (RFC 5880 §4.1): encode, and decode with the checks of §6.8.6 that a
// packet fails on its own, before any session is looked up. Authentication is not supported,
// so a packet with the A bit is discarded too (§6.8.6: "If the A bit is set and no
// authentication is in use"): no session here ever uses it.
import { BFD_STATES, type BfdControlPacket, type BfdStateName } from './types.js';

/** The mandatory section's length: what we send, and the least a packet without the A bit may have. */
export const BFD_CONTROL_LENGTH = 24;

const STATE_CODE: Record<BfdStateName, number> = { AdminDown: 0, Down: 1, Init: 2, Up: 3 };

export type DecodeResult =
  | { readonly packet: BfdControlPacket; readonly error?: undefined }
  | { readonly packet?: undefined; readonly error: string };

/** The packet's 24 octets, version 1, no authentication section. */
export function encodeControlPacket(p: BfdControlPacket, out: Buffer = Buffer.allocUnsafe(BFD_CONTROL_LENGTH)): Buffer {
  out[0] = (1 << 5) | (p.diag & 0x1f);
  out[1] =
    (STATE_CODE[p.state] << 6) |
    (p.poll ? 0x20 : 0) |
    (p.final ? 0x10 : 0) |
    (p.controlPlaneIndependent ? 0x08 : 0) |
    (p.authenticationPresent ? 0x04 : 0) |
    (p.demand ? 0x02 : 0) |
    (p.multipoint ? 0x01 : 0);
  out[2] = p.detectMult;
  out[3] = BFD_CONTROL_LENGTH;
  out.writeUInt32BE(p.myDiscriminator >>> 0, 4);
  out.writeUInt32BE(p.yourDiscriminator >>> 0, 8);
  out.writeUInt32BE(p.desiredMinTxInterval >>> 0, 12);
  out.writeUInt32BE(p.requiredMinRxInterval >>> 0, 16);
  out.writeUInt32BE(p.requiredMinEchoRxInterval >>> 0, 20);
  return out;
}

/**
 * A received datagram as a Control packet, or why it is discarded. The reasons are the
 * bullets of §6.8.6 that need no session; the caller applies the rest (discriminator lookup).
 */
export function decodeControlPacket(b: Uint8Array): DecodeResult {
  if (b.length < BFD_CONTROL_LENGTH) return { error: `${b.length} octets, shorter than a Control packet (24)` };
  const version = b[0] >> 5;
  if (version !== 1) return { error: `version ${version}, not 1` };
  const flags = b[1];
  const authenticationPresent = (flags & 0x04) !== 0;
  const length = b[3];
  const least = authenticationPresent ? 26 : BFD_CONTROL_LENGTH;
  if (length < least) return { error: `Length ${length}, less than ${least}` };
  if (length > b.length) return { error: `Length ${length}, more than the ${b.length} octets received` };
  const detectMult = b[2];
  if (detectMult === 0) return { error: 'Detect Mult is zero' };
  if ((flags & 0x01) !== 0) return { error: 'Multipoint (M) bit set' };
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const myDiscriminator = view.getUint32(4);
  if (myDiscriminator === 0) return { error: 'My Discriminator is zero' };
  const yourDiscriminator = view.getUint32(8);
  const state = BFD_STATES[flags >> 6];
  if (yourDiscriminator === 0 && state !== 'Down' && state !== 'AdminDown') {
    return { error: `Your Discriminator is zero in state ${state}` };
  }
  if (authenticationPresent) return { error: 'Authentication Present (A) bit set, and no session uses authentication' };
  const poll = (flags & 0x20) !== 0;
  const final = (flags & 0x10) !== 0;
  return {
    packet: {
      diag: b[0] & 0x1f,
      state,
      poll,
      final,
      controlPlaneIndependent: (flags & 0x08) !== 0,
      authenticationPresent,
      demand: (flags & 0x02) !== 0,
      multipoint: false,
      detectMult,
      myDiscriminator,
      yourDiscriminator,
      desiredMinTxInterval: view.getUint32(12),
      requiredMinRxInterval: view.getUint32(16),
      requiredMinEchoRxInterval: view.getUint32(20),
    },
  };
}
