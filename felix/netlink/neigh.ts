// RTM_NEWNEIGH / RTM_DELNEIGH / RTM_GETNEIGH: the static ARP (or NDP) entry and the bridge
// FDB entry that send a remote VTEP's MAC to its node over VXLAN.

import { formatAddress, parseAddress } from '../../ip/index.js';
import type { Neighbor } from '../model.js';
import {
  AF_BRIDGE,
  AF_INET,
  AF_INET6,
  NDA_DST,
  NDA_LLADDR,
  NLM_F_ACK,
  NLM_F_CREATE,
  NLM_F_DUMP,
  NLM_F_REPLACE,
  NLM_F_REQUEST,
  NTF_SELF,
  NUD_PERMANENT,
  RTM_DELNEIGH,
  RTM_GETNEIGH,
  RTM_NEWNEIGH,
} from './constants.js';
import { forEachAttr, type MessageWriter } from './writer.js';

export function macBytes(mac: string): Uint8Array {
  return Uint8Array.from(mac.split(':').map((x) => parseInt(x, 16)));
}

export function formatMac(b: Uint8Array): string {
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join(':');
}

export function writeNeighbor(w: MessageWriter, mode: 'replace' | 'delete', n: Neighbor, ifindex: number): number {
  const addr = parseAddress(n.address, 'address');
  const family = n.kind === 'fdb' ? AF_BRIDGE : addr.family === 4 ? AF_INET : AF_INET6;
  const seq = w.begin(
    mode === 'delete' ? RTM_DELNEIGH : RTM_NEWNEIGH,
    NLM_F_REQUEST | NLM_F_ACK | (mode === 'replace' ? NLM_F_CREATE | NLM_F_REPLACE : 0),
  );
  w.u8(family);
  w.u8(0);
  w.u16(0);
  w.i32(ifindex);
  w.u16(NUD_PERMANENT);
  w.u8(n.kind === 'fdb' ? NTF_SELF : 0);
  w.u8(0);
  if (n.kind === 'fdb') {
    w.attrBytes(NDA_LLADDR, macBytes(n.mac));
    w.attrBytes(NDA_DST, addr.bytes);
  } else {
    w.attrBytes(NDA_DST, addr.bytes);
    w.attrBytes(NDA_LLADDR, macBytes(n.mac));
  }
  w.end();
  return seq;
}

export function writeNeighborDump(w: MessageWriter, family: 'arp4' | 'arp6' | 'fdb'): void {
  w.begin(RTM_GETNEIGH, NLM_F_REQUEST | NLM_F_DUMP);
  w.u8(family === 'fdb' ? AF_BRIDGE : family === 'arp4' ? AF_INET : AF_INET6);
  for (let i = 0; i < 11; i++) w.u8(0);
  w.end();
}

/** Decodes a dumped neighbour; null unless it is a permanent entry of the kind felix writes. */
export function readNeighbor(buf: Buffer, start: number, end: number, ifname: (index: number) => string): Neighbor | null {
  const o = start + 16;
  const family = buf[o];
  const index = buf.readInt32LE(o + 4);
  const state = buf.readUInt16LE(o + 8);
  const flags = buf[o + 10];
  if (!(state & NUD_PERMANENT)) return null;
  let dst: string | undefined, mac: string | undefined;
  forEachAttr(buf, o + 12, end, (t, a, b) => {
    if (t === NDA_DST) dst = formatAddress(buf.subarray(a, b));
    else if (t === NDA_LLADDR && b - a === 6) mac = formatMac(buf.subarray(a, b));
  });
  if (!dst || !mac) return null;
  if (family === AF_BRIDGE) return flags & NTF_SELF ? { kind: 'fdb', dev: ifname(index), address: dst, mac } : null;
  return { kind: 'arp', dev: ifname(index), address: dst, mac };
}
