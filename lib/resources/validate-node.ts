// Node: its BGP fields (the addresses and AS the node agent speaks with, and a route reflector's
// cluster ID), its WireGuard interface addresses and, in `status`, its WireGuard public keys, as
// Calico has them; Calico's other Node fields are refused by name. The status rides in the stored
// spec, as a Service's does, and is printed at the top.
import {
  NODE_BGP_FIELDS,
  NODE_BGP_REFUSED,
  NODE_FIELDS,
  NODE_REFUSED,
  NODE_STATUS_FIELDS,
  NODE_STATUS_REFUSED,
  NODE_WIREGUARD_FIELDS,
} from './calico-fields.js';
import type { Checker, Obj } from './checker.js';

/** WireGuard's text form of a key: base64 of 32 bytes. */
const WIREGUARD_KEY_RE = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;

export function checkNode(c: Checker, s: Obj): Obj {
  c.only(s, NODE_FIELDS, 'spec', NODE_REFUSED);
  const out: Obj = {};
  if (s.bgp !== undefined && s.bgp !== null) out.bgp = checkNodeBgp(c, c.obj(s.bgp, 'spec.bgp'));
  if (s.wireguard !== undefined && s.wireguard !== null) {
    const w = c.obj(s.wireguard, 'spec.wireguard');
    c.only(w, NODE_WIREGUARD_FIELDS, 'spec.wireguard');
    const wg: Obj = {};
    for (const [k, family] of [
      ['interfaceIPv4Address', 4],
      ['interfaceIPv6Address', 6],
    ] as const) {
      const v = c.str(w, k, 'spec.wireguard');
      if (v === undefined || v === '') continue;
      if (c.cidr(v.includes('/') ? v : `${v}/${family === 4 ? 32 : 128}`, `spec.wireguard.${k}`, false).family !== family)
        c.fail(`spec.wireguard.${k}`, `${v} is not an IPv${family} address`);
      wg[k] = v;
    }
    if (Object.keys(wg).length > 0) out.wireguard = wg;
  }
  if (s.status !== undefined && s.status !== null) {
    const st = c.obj(s.status, 'status');
    c.only(st, NODE_STATUS_FIELDS, 'status', NODE_STATUS_REFUSED);
    const status: Obj = {};
    for (const k of NODE_STATUS_FIELDS) {
      const v = c.str(st, k, 'status');
      if (v === undefined || v === '') continue;
      if (!WIREGUARD_KEY_RE.test(v)) c.fail(`status.${k}`, `${JSON.stringify(v)} is not a WireGuard public key (base64 of 32 bytes)`);
      status[k] = v;
    }
    if (Object.keys(status).length > 0) out.status = status;
  }
  return out;
}

/** The body to check as `spec`: a Node's `status` goes in beside its spec fields. */
export function nodeBody(c: Checker, o: Obj): Obj {
  const spec = o.spec === undefined || o.spec === null ? {} : c.obj(o.spec, 'spec');
  if (o.status === undefined || o.status === null) return spec;
  if (spec.status !== undefined && spec.status !== null) c.fail('status', 'is given twice: at the top and in spec');
  return { ...spec, status: c.obj(o.status, 'status') };
}

function checkNodeBgp(c: Checker, b: Obj): Obj {
  c.only(b, NODE_BGP_FIELDS, 'spec.bgp', NODE_BGP_REFUSED);
  const bgp: Obj = {};
  // An address may carry its subnet's prefix length, as Calico writes it (10.0.0.1/24).
  const v4 = c.str(b, 'ipv4Address', 'spec.bgp');
  if (v4 !== undefined) {
    if (c.cidr(v4.includes('/') ? v4 : `${v4}/32`, 'spec.bgp.ipv4Address', false).family !== 4)
      c.fail('spec.bgp.ipv4Address', `${v4} is not an IPv4 address`);
    bgp.ipv4Address = v4;
  }
  const v6 = c.str(b, 'ipv6Address', 'spec.bgp');
  if (v6 !== undefined) {
    if (c.cidr(v6.includes('/') ? v6 : `${v6}/128`, 'spec.bgp.ipv6Address', false).family !== 6)
      c.fail('spec.bgp.ipv6Address', `${v6} is not an IPv6 address`);
    bgp.ipv6Address = v6;
  }
  const as = c.asNumber(b, 'asNumber', 'spec.bgp');
  if (as !== undefined) bgp.asNumber = as;
  const rr = c.str(b, 'routeReflectorClusterID', 'spec.bgp');
  if (rr !== undefined && rr !== '') {
    bgp.routeReflectorClusterID = c.routerId(rr, 'spec.bgp.routeReflectorClusterID');
  }
  return bgp;
}
