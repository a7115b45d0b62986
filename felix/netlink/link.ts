// RTM_*LINK and RTM_*ADDR: find devices by name, create vxlan.calico (and tunl0 where the
// kernel has ipip), set MTU and up, give a tunnel device its address.

import { formatAddress, parseInterfaceAddress } from '../../ip/index.js';
import {
  AF_INET,
  AF_INET6,
  AF_UNSPEC,
  IFA_ADDRESS,
  IFA_LOCAL,
  IFF_UP,
  IFLA_ADDRESS,
  IFLA_IFNAME,
  IFLA_INFO_DATA,
  IFLA_INFO_KIND,
  IFLA_LINKINFO,
  IFLA_MTU,
  IFLA_VXLAN_ID,
  IFLA_VXLAN_LEARNING,
  IFLA_VXLAN_LINK,
  IFLA_VXLAN_LOCAL,
  IFLA_VXLAN_LOCAL6,
  IFLA_VXLAN_PORT,
  NLM_F_ACK,
  NLM_F_CREATE,
  NLM_F_DUMP,
  NLM_F_EXCL,
  NLM_F_REPLACE,
  NLM_F_REQUEST,
  RTM_DELADDR,
  RTM_DELLINK,
  RTM_GETADDR,
  RTM_GETLINK,
  RTM_NEWADDR,
  RTM_NEWLINK,
} from './constants.js';
import { formatMac, macBytes } from './neigh.js';
import { forEachAttr, type MessageWriter } from './writer.js';

export interface LinkInfo {
  readonly index: number;
  readonly name: string;
  readonly up: boolean;
  readonly mtu: number;
  readonly mac?: string;
  /** The driver kind from IFLA_INFO_KIND (veth, vxlan, ipip...), when the kernel gives one. */
  readonly kind?: string;
  readonly vxlan?: { readonly vni?: number; readonly port?: number };
}

export interface AddressInfo {
  readonly index: number;
  /** "10.0.0.1/32" */
  readonly cidr: string;
}

function ifinfo(w: MessageWriter, index: number, flags: number, change: number): void {
  w.u8(AF_UNSPEC);
  w.u8(0);
  w.u16(0);
  w.i32(index);
  w.u32(flags);
  w.u32(change);
}

export function writeLinkDump(w: MessageWriter): void {
  w.begin(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP);
  ifinfo(w, 0, 0, 0);
  w.end();
}

export function readLink(buf: Buffer, start: number, end: number): LinkInfo {
  const o = start + 16;
  const index = buf.readInt32LE(o + 4);
  const flags = buf.readUInt32LE(o + 8);
  let name = '',
    mtu = 0,
    mac: string | undefined,
    kind: string | undefined;
  let vni: number | undefined, port: number | undefined;
  forEachAttr(buf, o + 16, end, (t, a, b) => {
    if (t === IFLA_IFNAME) name = buf.toString('utf8', a, b).replace(/\0+$/, '');
    else if (t === IFLA_MTU) mtu = buf.readUInt32LE(a);
    else if (t === IFLA_ADDRESS && b - a === 6) mac = formatMac(buf.subarray(a, b));
    else if (t === IFLA_LINKINFO)
      forEachAttr(buf, a, b, (u, x, y) => {
        if (u === IFLA_INFO_KIND) kind = buf.toString('utf8', x, y).replace(/\0+$/, '');
        else if (u === IFLA_INFO_DATA)
          forEachAttr(buf, x, y, (v, p, q) => {
            if (v === IFLA_VXLAN_ID) vni = buf.readUInt32LE(p);
            else if (v === IFLA_VXLAN_PORT && q - p === 2) port = buf.readUInt16BE(p);
          });
      });
  });
  const info: LinkInfo = { index, name, up: (flags & IFF_UP) !== 0, mtu, mac, kind, vxlan: kind === 'vxlan' ? { vni, port } : undefined };
  return info;
}

export interface VxlanSpec {
  readonly name: string;
  readonly vni: number;
  readonly port: number;
  readonly mtu: number;
  /** Underlay source address (this node's address). */
  readonly localIp?: string;
  /** Underlay device index. */
  readonly parentIndex?: number;
  readonly mac?: string;
}

export function writeVxlanCreate(w: MessageWriter, s: VxlanSpec): number {
  const seq = w.begin(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
  ifinfo(w, 0, 0, 0);
  w.attrString(IFLA_IFNAME, s.name);
  w.attrU32(IFLA_MTU, s.mtu);
  if (s.mac) w.attrBytes(IFLA_ADDRESS, macBytes(s.mac));
  w.nestBegin(IFLA_LINKINFO);
  w.attrString(IFLA_INFO_KIND, 'vxlan');
  w.nestBegin(IFLA_INFO_DATA);
  w.attrU32(IFLA_VXLAN_ID, s.vni);
  if (s.parentIndex !== undefined) w.attrU32(IFLA_VXLAN_LINK, s.parentIndex);
  if (s.localIp) {
    const c = parseInterfaceAddress(s.localIp, 'localIp');
    w.attrBytes(c.family === 4 ? IFLA_VXLAN_LOCAL : IFLA_VXLAN_LOCAL6, c.bytes);
  }
  w.attrU8(IFLA_VXLAN_LEARNING, 0); // felix writes every FDB entry itself
  w.attrU16BE(IFLA_VXLAN_PORT, s.port);
  w.nestEnd();
  w.nestEnd();
  w.end();
  return seq;
}

/** Creates the ipip device; fails with EOPNOTSUPP where the kernel has no ipip driver. */
export function writeIpipCreate(w: MessageWriter, name: string, mtu: number): number {
  const seq = w.begin(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
  ifinfo(w, 0, 0, 0);
  w.attrString(IFLA_IFNAME, name);
  w.attrU32(IFLA_MTU, mtu);
  w.nestBegin(IFLA_LINKINFO);
  w.attrString(IFLA_INFO_KIND, 'ipip');
  w.nestEnd();
  w.end();
  return seq;
}

export function writeLinkSet(w: MessageWriter, index: number, s: { up?: boolean; mtu?: number }): number {
  const seq = w.begin(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK);
  ifinfo(w, index, s.up ? IFF_UP : 0, s.up === undefined ? 0 : IFF_UP);
  if (s.mtu !== undefined) w.attrU32(IFLA_MTU, s.mtu);
  w.end();
  return seq;
}

export function writeLinkDelete(w: MessageWriter, index: number): number {
  const seq = w.begin(RTM_DELLINK, NLM_F_REQUEST | NLM_F_ACK);
  ifinfo(w, index, 0, 0);
  w.end();
  return seq;
}

export function writeAddress(w: MessageWriter, mode: 'replace' | 'delete', index: number, cidr: string): number {
  const c = parseInterfaceAddress(cidr, 'address');
  const seq = w.begin(
    mode === 'delete' ? RTM_DELADDR : RTM_NEWADDR,
    NLM_F_REQUEST | NLM_F_ACK | (mode === 'replace' ? NLM_F_CREATE | NLM_F_REPLACE : 0),
  );
  w.u8(c.family === 4 ? AF_INET : AF_INET6);
  w.u8(c.prefixLength);
  w.u8(0);
  w.u8(0);
  w.u32(index);
  w.attrBytes(IFA_LOCAL, c.bytes);
  w.attrBytes(IFA_ADDRESS, c.bytes);
  w.end();
  return seq;
}

export function writeAddressDump(w: MessageWriter, family: 4 | 6): void {
  w.begin(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP);
  w.u8(family === 4 ? AF_INET : AF_INET6);
  for (let i = 0; i < 7; i++) w.u8(0);
  w.end();
}

export function readAddress(buf: Buffer, start: number, end: number): AddressInfo | null {
  const o = start + 16;
  const len = buf[o + 1];
  const index = buf.readUInt32LE(o + 4);
  let addr: string | undefined, local: string | undefined;
  forEachAttr(buf, o + 8, end, (t, a, b) => {
    if (t === IFA_ADDRESS) addr = formatAddress(buf.subarray(a, b));
    else if (t === IFA_LOCAL) local = formatAddress(buf.subarray(a, b));
  });
  const ip = local ?? addr;
  return ip ? { index, cidr: `${ip}/${len}` } : null;
}
