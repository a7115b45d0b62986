// RTM_NEWROUTE / RTM_DELROUTE / RTM_GETROUTE encoding and route dump decoding.

import { formatAddress, parseCidr, parseAddress } from '../../ip/index.js';
import type { InstalledRoute, NextHop, Route } from '../model.js';
import {
  AF_INET,
  AF_INET6,
  NLM_F_ACK,
  NLM_F_CREATE,
  NLM_F_DUMP,
  NLM_F_EXCL,
  NLM_F_REPLACE,
  NLM_F_REQUEST,
  RTA_DST,
  RTA_GATEWAY,
  RTA_MULTIPATH,
  RTA_OIF,
  RTA_PRIORITY,
  RTA_TABLE,
  RTM_DELROUTE,
  RTM_GETROUTE,
  RTM_NEWROUTE,
  RTN_BLACKHOLE,
  RTN_UNICAST,
  RTNH_F_ONLINK,
  RT_SCOPE_LINK,
  RT_SCOPE_NOWHERE,
  RT_SCOPE_UNIVERSE,
} from './constants.js';
import { forEachAttr, type MessageWriter } from './writer.js';

export interface RouteWriteOptions {
  readonly protocol: number;
  readonly table: number;
  /** Metric to write; undefined lets the kernel choose (0 for IPv4, 1024 for IPv6). */
  readonly metric?: number;
  /** Device name to ifindex; unknown names throw so the route is reported, not sent. */
  readonly ifindex: (dev: string) => number;
}

export class UnknownDeviceError extends Error {
  constructor(readonly dev: string) {
    super(`device ${dev} does not exist`);
    this.name = 'UnknownDeviceError';
  }
}

function header(w: MessageWriter, family: number, dstLen: number, o: RouteWriteOptions, scope: number, type: number, flags: number): void {
  w.u8(family);
  w.u8(dstLen);
  w.u8(0); // src_len
  w.u8(0); // tos
  w.u8(o.table < 256 ? o.table : 252);
  w.u8(o.protocol);
  w.u8(scope);
  w.u8(type);
  w.u32(flags);
}

/**
 * Appends one route request. `mode`: 'create' fails with EEXIST if any route (of any owner)
 * has the key already; 'replace' overwrites ours; 'delete' removes only a route carrying
 * our protocol (the kernel matches rtm_protocol on delete).
 */
export function writeRoute(w: MessageWriter, mode: 'create' | 'replace' | 'delete', r: Route, o: RouteWriteOptions): number {
  const dst = parseCidr(r.dst, 'dst');
  // Resolve devices before starting the message, so a missing device never leaves half a message.
  const hops = r.type === 'blackhole' || mode === 'delete' ? [] : r.nextHops.map((h) => ({ h, index: o.ifindex(h.dev) }));
  const family = dst.family === 4 ? AF_INET : AF_INET6;
  const type = r.type === 'blackhole' ? RTN_BLACKHOLE : RTN_UNICAST;
  const scope = type === RTN_UNICAST && r.nextHops.every((h) => !h.gateway) ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
  const msgType = mode === 'delete' ? RTM_DELROUTE : RTM_NEWROUTE;
  const flags =
    NLM_F_REQUEST | NLM_F_ACK | (mode === 'create' ? NLM_F_CREATE | NLM_F_EXCL : mode === 'replace' ? NLM_F_CREATE | NLM_F_REPLACE : 0);
  const seq = w.begin(msgType, flags);
  const single = hops.length === 1 ? hops[0] : undefined;
  // A delete matches any scope only with RT_SCOPE_NOWHERE (as iproute2 sends it).
  header(
    w,
    family,
    dst.prefixLength,
    o,
    mode === 'delete' ? RT_SCOPE_NOWHERE : scope,
    mode === 'delete' ? 0 : type,
    single?.h.onlink ? RTNH_F_ONLINK : 0,
  );
  w.attrBytes(RTA_DST, dst.bytes);
  if (o.table >= 256) w.attrU32(RTA_TABLE, o.table);
  if (o.metric !== undefined) w.attrU32(RTA_PRIORITY, o.metric);
  if (single) {
    w.attrU32(RTA_OIF, single.index);
    if (single.h.gateway) w.attrBytes(RTA_GATEWAY, parseAddress(single.h.gateway, 'gateway').bytes);
  } else if (hops.length > 1) {
    w.nestBegin(RTA_MULTIPATH, false);
    for (const { h, index } of hops) {
      const at = w.mark();
      w.u16(0); // rtnh_len, patched below
      w.u8(h.onlink ? RTNH_F_ONLINK : 0);
      w.u8(0); // rtnh_hops (weight - 1)
      w.i32(index);
      if (h.gateway) w.attrBytes(RTA_GATEWAY, parseAddress(h.gateway, 'gateway').bytes);
      w.patchLength(at);
    }
    w.nestEnd();
  }
  w.end();
  return seq;
}

export function writeRouteDump(w: MessageWriter, family: 4 | 6): void {
  w.begin(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP);
  w.u8(family === 4 ? AF_INET : AF_INET6);
  for (let i = 0; i < 11; i++) w.u8(0);
  w.end();
}

/**
 * Decodes one RTM_NEWROUTE from a dump. Returns null for what felix never manages (other
 * tables, other protocols when `onlyProtocol` is set, route types other than unicast and
 * blackhole), cheaply, before reading attributes.
 */
export function readRoute(
  buf: Buffer,
  start: number,
  end: number,
  ifname: (index: number) => string,
  onlyProtocol?: number,
  onlyTable?: number,
): InstalledRoute | null {
  const o = start + 16;
  const family = buf[o];
  const dstLen = buf[o + 1];
  const protocol = buf[o + 5];
  const rtype = buf[o + 7];
  if (onlyProtocol !== undefined && protocol !== onlyProtocol) return null;
  if (rtype !== RTN_UNICAST && rtype !== RTN_BLACKHOLE) return null;
  if (family !== AF_INET && family !== AF_INET6) return null;
  const rflags = buf.readUInt32LE(o + 8);
  let table = buf[o + 4];
  let dst: Uint8Array = new Uint8Array(family === AF_INET ? 4 : 16);
  let metric = 0,
    oif = -1;
  let gateway: string | undefined;
  let multipath: NextHop[] | undefined;
  // A plain loop, not forEachAttr: a resync reads every route of the table.
  for (let at = o + 12; at + 4 <= end; ) {
    const len = buf.readUInt16LE(at);
    if (len < 4 || at + len > end) break;
    const a = at + 4,
      b = at + len;
    switch (buf.readUInt16LE(at + 2) & 0x3fff) {
      case RTA_DST:
        dst = buf.subarray(a, b);
        break;
      case RTA_TABLE:
        table = buf.readUInt32LE(a);
        break;
      case RTA_PRIORITY:
        metric = buf.readUInt32LE(a);
        break;
      case RTA_OIF:
        oif = buf.readInt32LE(a);
        break;
      case RTA_GATEWAY:
        gateway = formatAddress(buf.subarray(a, b));
        break;
      case RTA_MULTIPATH:
        multipath = readMultipath(buf, a, b, ifname);
        break;
    }
    at += (len + 3) & ~3;
  }
  if (onlyTable !== undefined && table !== onlyTable) return null;
  const prefix = `${formatAddress(dst)}/${dstLen}`;
  let nextHops: NextHop[] = [];
  if (rtype === RTN_UNICAST) {
    if (multipath) nextHops = multipath;
    else nextHops = [hop(ifname(oif), gateway, (rflags & RTNH_F_ONLINK) !== 0)];
  }
  return { dst: prefix, type: rtype === RTN_BLACKHOLE ? 'blackhole' : 'unicast', nextHops, protocol, table, metric };
}

function hop(dev: string, gateway: string | undefined, onlink: boolean): NextHop {
  const h: { dev: string; gateway?: string; onlink?: boolean } = { dev };
  if (gateway) h.gateway = gateway;
  if (onlink) h.onlink = true;
  return h;
}

function readMultipath(buf: Buffer, a: number, b: number, ifname: (index: number) => string): NextHop[] {
  const out: NextHop[] = [];
  let o = a;
  while (o + 8 <= b) {
    const len = buf.readUInt16LE(o);
    if (len < 8 || o + len > b) break;
    const flags = buf[o + 2];
    const index = buf.readInt32LE(o + 4);
    let gw: string | undefined;
    forEachAttr(buf, o + 8, o + len, (t, x, y) => {
      if (t === RTA_GATEWAY) gw = formatAddress(buf.subarray(x, y));
    });
    out.push(hop(ifname(index), gw, (flags & RTNH_F_ONLINK) !== 0));
    o += (len + 3) & ~3;
  }
  return out;
}
