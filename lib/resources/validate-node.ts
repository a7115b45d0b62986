// Node: only its BGP fields (the addresses and AS the node agent speaks with, and a route
// reflector's cluster ID); Calico's other Node fields are refused by name.
import { NODE_BGP_FIELDS, NODE_BGP_REFUSED, NODE_FIELDS, NODE_REFUSED } from './calico-fields.js';
import type { Checker, Obj } from './checker.js';

export function checkNode(c: Checker, s: Obj): Obj {
  c.only(s, NODE_FIELDS, 'spec', NODE_REFUSED);
  const out: Obj = {};
  if (s.bgp !== undefined && s.bgp !== null) out.bgp = checkNodeBgp(c, c.obj(s.bgp, 'spec.bgp'));
  return out;
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
