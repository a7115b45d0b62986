// The kernel's WireGuard netlink family (generic netlink "wireguard", <linux/wireguard.h>) and
// the policy-routing rules (<linux/fib_rules.h>): requests written into a MessageWriter, replies
// read from a dump buffer. Only what felix uses.
import { formatAddress, parseAddress, parseCidr } from '../../ip/index.js';
import {
  AF_INET,
  AF_INET6,
  AF_UNSPEC,
  IFLA_IFNAME,
  IFLA_INFO_KIND,
  IFLA_LINKINFO,
  IFLA_MTU,
  NLM_F_ACK,
  NLM_F_CREATE,
  NLM_F_DUMP,
  NLM_F_EXCL,
  NLM_F_REQUEST,
  RTM_NEWLINK,
} from '../netlink/constants.js';
import { forEachAttr, type MessageWriter } from '../netlink/writer.js';
import type { InstalledPeer } from './dataplane.js';
import type { WireguardFamily, WireguardPeerSpec, WireguardRule } from './desired.js';

export const NETLINK_GENERIC = 16;
const GENL_ID_CTRL = 0x10;
const CTRL_CMD_GETFAMILY = 3;
const CTRL_ATTR_FAMILY_ID = 1;
const CTRL_ATTR_FAMILY_NAME = 2;

const WG_CMD_GET_DEVICE = 0;
const WG_CMD_SET_DEVICE = 1;
const WGDEVICE_A_IFNAME = 2;
const WGDEVICE_A_PRIVATE_KEY = 3;
const WGDEVICE_A_LISTEN_PORT = 6;
const WGDEVICE_A_FWMARK = 7;
const WGDEVICE_A_PEERS = 8;
const WGPEER_A_PUBLIC_KEY = 1;
const WGPEER_A_FLAGS = 3;
const WGPEER_A_ENDPOINT = 4;
const WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL = 5;
const WGPEER_A_LAST_HANDSHAKE_TIME = 6;
const WGPEER_A_ALLOWEDIPS = 9;
const WGPEER_F_REMOVE_ME = 1;
const WGPEER_F_REPLACE_ALLOWEDIPS = 2;
const WGALLOWEDIP_A_FAMILY = 1;
const WGALLOWEDIP_A_IPADDR = 2;
const WGALLOWEDIP_A_CIDR_MASK = 3;

const RTM_NEWRULE = 32;
const RTM_DELRULE = 33;
const RTM_GETRULE = 34;
const FRA_PRIORITY = 6;
const FRA_FWMARK = 10;
const FRA_TABLE = 15;
const FRA_FWMASK = 16;
const FR_ACT_TO_TBL = 1;
const FIB_RULE_INVERT = 0x2;

/** Makes a WireGuard device (the kernel loads its module on the way). */
export function writeWireguardCreate(w: MessageWriter, name: string, mtu: number): void {
  w.begin(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
  w.u8(AF_UNSPEC);
  w.u8(0);
  w.u16(0);
  w.i32(0);
  w.u32(0);
  w.u32(0);
  w.attrString(IFLA_IFNAME, name);
  w.attrU32(IFLA_MTU, mtu);
  w.nestBegin(IFLA_LINKINFO);
  w.attrString(IFLA_INFO_KIND, 'wireguard');
  w.nestEnd();
  w.end();
}

function genl(w: MessageWriter, cmd: number): void {
  w.u8(cmd);
  w.u8(1); // version
  w.u16(0);
}

/** Asks the controller for the id of the family named `name`. */
export function writeFamilyLookup(w: MessageWriter, name: string): void {
  w.begin(GENL_ID_CTRL, NLM_F_REQUEST | NLM_F_ACK);
  genl(w, CTRL_CMD_GETFAMILY);
  w.attrString(CTRL_ATTR_FAMILY_NAME, name);
  w.end();
}

export function readFamilyId(buf: Buffer, start: number, end: number): number | undefined {
  let id: number | undefined;
  forEachAttr(buf, start + 20, end, (t, a) => {
    if (t === CTRL_ATTR_FAMILY_ID) id = buf.readUInt16LE(a);
  });
  return id;
}

/** The device's configuration and peers, as a dump (several messages when it has many peers). */
export function writeGetDevice(w: MessageWriter, family: number, name: string): void {
  w.begin(family, NLM_F_REQUEST | NLM_F_DUMP);
  genl(w, WG_CMD_GET_DEVICE);
  w.attrString(WGDEVICE_A_IFNAME, name);
  w.end();
}

export interface DeviceState {
  privateKey?: string;
  listenPort: number;
  fwmark: number;
  peers: InstalledPeer[];
}

/** Reads one GET_DEVICE reply into `into` (peers add up across the dump's messages). */
export function readDevice(buf: Buffer, start: number, end: number, into: DeviceState): void {
  forEachAttr(buf, start + 20, end, (t, a, b) => {
    if (t === WGDEVICE_A_PRIVATE_KEY && b - a === 32) {
      const key = buf.subarray(a, b);
      if (key.some((x) => x !== 0)) into.privateKey = key.toString('base64');
    } else if (t === WGDEVICE_A_LISTEN_PORT) into.listenPort = buf.readUInt16LE(a);
    else if (t === WGDEVICE_A_FWMARK) into.fwmark = buf.readUInt32LE(a);
    else if (t === WGDEVICE_A_PEERS) forEachAttr(buf, a, b, (_i, x, y) => into.peers.push(readPeer(buf, x, y)));
  });
}

function readPeer(buf: Buffer, start: number, end: number): InstalledPeer {
  let publicKey = '',
    endpoint: string | undefined,
    keepAliveSeconds = 0,
    latestHandshake = 0;
  const allowedIps: string[] = [];
  forEachAttr(buf, start, end, (t, a, b) => {
    if (t === WGPEER_A_PUBLIC_KEY) publicKey = buf.toString('base64', a, b);
    else if (t === WGPEER_A_ENDPOINT) endpoint = readSockaddr(buf, a, b);
    else if (t === WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL) keepAliveSeconds = buf.readUInt16LE(a);
    else if (t === WGPEER_A_LAST_HANDSHAKE_TIME && b - a >= 8) latestHandshake = Number(buf.readBigInt64LE(a));
    else if (t === WGPEER_A_ALLOWEDIPS)
      forEachAttr(buf, a, b, (_i, x, y) => {
        let ip: string | undefined,
          mask = 0;
        forEachAttr(buf, x, y, (u, p, q) => {
          if (u === WGALLOWEDIP_A_IPADDR) ip = formatAddress(buf.subarray(p, q));
          else if (u === WGALLOWEDIP_A_CIDR_MASK) mask = buf[p];
        });
        if (ip) allowedIps.push(`${ip}/${mask}`);
      });
  });
  return { publicKey, ...(endpoint ? { endpoint } : {}), allowedIps, keepAliveSeconds, latestHandshake };
}

function readSockaddr(buf: Buffer, a: number, b: number): string | undefined {
  const family = buf.readUInt16LE(a);
  const port = buf.readUInt16BE(a + 2);
  if (family === AF_INET && b - a >= 8) return `${formatAddress(buf.subarray(a + 4, a + 8))}:${port}`;
  if (family === AF_INET6 && b - a >= 24) return `[${formatAddress(buf.subarray(a + 8, a + 24))}]:${port}`;
  return undefined;
}

/** "10.0.0.2:51820" or "[fd00::2]:51821" as a struct sockaddr_in / sockaddr_in6. */
function sockaddr(endpoint: string): Buffer {
  const m = /^\[(.+)\]:(\d+)$/.exec(endpoint) ?? /^([^:]+):(\d+)$/.exec(endpoint);
  if (!m) throw new Error(`endpoint ${endpoint} is not address:port`);
  const addr = parseAddress(m[1] ?? '', 'endpoint');
  const port = Number(m[2]);
  const out = Buffer.alloc(addr.family === 4 ? 16 : 28);
  out.writeUInt16LE(addr.family === 4 ? AF_INET : AF_INET6, 0);
  out.writeUInt16BE(port, 2);
  out.set(addr.bytes, addr.family === 4 ? 4 : 8);
  return out;
}

/** The device's key, port and mark. */
export function writeSetDevice(w: MessageWriter, family: number, name: string, privateKey: string, port: number, fwmark: number): void {
  w.begin(family, NLM_F_REQUEST | NLM_F_ACK);
  genl(w, WG_CMD_SET_DEVICE);
  w.attrString(WGDEVICE_A_IFNAME, name);
  w.attrBytes(WGDEVICE_A_PRIVATE_KEY, Buffer.from(privateKey, 'base64'));
  w.attrBytes(WGDEVICE_A_LISTEN_PORT, u16le(port));
  w.attrU32(WGDEVICE_A_FWMARK, fwmark);
  w.end();
}

/** One request: peers removed, and peers set (endpoint, keepalive, allowed IPs replaced). */
export function writeSetPeers(
  w: MessageWriter,
  family: number,
  name: string,
  set: readonly WireguardPeerSpec[],
  remove: readonly string[],
): void {
  // Encoded before the message begins, so a bad endpoint never leaves half a message.
  const endpoints = set.map((p) => sockaddr(p.endpoint));
  w.begin(family, NLM_F_REQUEST | NLM_F_ACK);
  genl(w, WG_CMD_SET_DEVICE);
  w.attrString(WGDEVICE_A_IFNAME, name);
  w.nestBegin(WGDEVICE_A_PEERS);
  for (const key of remove) {
    w.nestBegin(0);
    w.attrBytes(WGPEER_A_PUBLIC_KEY, Buffer.from(key, 'base64'));
    w.attrU32(WGPEER_A_FLAGS, WGPEER_F_REMOVE_ME);
    w.nestEnd();
  }
  set.forEach((p, i) => {
    w.nestBegin(0);
    w.attrBytes(WGPEER_A_PUBLIC_KEY, Buffer.from(p.publicKey, 'base64'));
    w.attrU32(WGPEER_A_FLAGS, WGPEER_F_REPLACE_ALLOWEDIPS);
    w.attrBytes(WGPEER_A_ENDPOINT, endpoints[i] ?? Buffer.alloc(0));
    w.attrBytes(WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL, u16le(p.keepAliveSeconds));
    w.nestBegin(WGPEER_A_ALLOWEDIPS);
    for (const a of p.allowedIps) {
      const c = parseCidr(a, 'allowed IP');
      w.nestBegin(0);
      w.attrBytes(WGALLOWEDIP_A_FAMILY, u16le(c.family === 4 ? AF_INET : AF_INET6));
      w.attrBytes(WGALLOWEDIP_A_IPADDR, c.bytes);
      w.attrU8(WGALLOWEDIP_A_CIDR_MASK, c.prefixLength);
      w.nestEnd();
    }
    w.nestEnd();
    w.nestEnd();
  });
  w.nestEnd();
  w.end();
}

function u16le(v: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(v, 0);
  return b;
}

export function writeRuleDump(w: MessageWriter, family: WireguardFamily): void {
  w.begin(RTM_GETRULE, NLM_F_REQUEST | NLM_F_DUMP);
  w.u8(family === 4 ? AF_INET : AF_INET6);
  for (let i = 0; i < 11; i++) w.u8(0);
  w.end();
}

/** A rule of the shape felix writes (`not fwmark M/M lookup T`), or null for any other. */
export function readRule(buf: Buffer, start: number, end: number, family: WireguardFamily): WireguardRule | null {
  const o = start + 16;
  const flags = buf.readUInt32LE(o + 8);
  if (buf[o + 7] !== FR_ACT_TO_TBL || !(flags & FIB_RULE_INVERT)) return null;
  let table = buf[o + 4],
    priority = 0;
  let mark: number | undefined, mask: number | undefined;
  forEachAttr(buf, o + 12, end, (t, a) => {
    if (t === FRA_PRIORITY) priority = buf.readUInt32LE(a);
    else if (t === FRA_TABLE) table = buf.readUInt32LE(a);
    else if (t === FRA_FWMARK) mark = buf.readUInt32LE(a);
    else if (t === FRA_FWMASK) mask = buf.readUInt32LE(a);
  });
  if (mark === undefined || mark !== mask) return null;
  return { family, priority, table, fwmark: mark };
}

export function writeRule(w: MessageWriter, op: 'add' | 'delete', r: WireguardRule): void {
  w.begin(op === 'add' ? RTM_NEWRULE : RTM_DELRULE, NLM_F_REQUEST | NLM_F_ACK | (op === 'add' ? NLM_F_CREATE | NLM_F_EXCL : 0));
  w.u8(r.family === 4 ? AF_INET : AF_INET6);
  w.u8(0); // dst_len
  w.u8(0); // src_len
  w.u8(0); // tos
  w.u8(r.table < 256 ? r.table : 252);
  w.u8(0);
  w.u8(0);
  w.u8(FR_ACT_TO_TBL);
  w.u32(FIB_RULE_INVERT);
  w.attrU32(FRA_PRIORITY, r.priority);
  w.attrU32(FRA_TABLE, r.table);
  w.attrU32(FRA_FWMARK, r.fwmark);
  w.attrU32(FRA_FWMASK, r.fwmark);
  w.end();
}
