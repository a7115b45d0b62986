// The kernel's own notice that a route of the node changed: a netlink socket in the IPv4 and
// IPv6 route groups that the event loop polls (the addon's uv_poll), so a change is read as soon
// as the kernel queues it and nothing runs while the routes are still. An addon built before it
// could poll gets no watch: felix then reads the table at its resyncs only.
// Only routes that next hops may resolve through count: the main table, not felix's own protocol, not link-local or multicast destinations
// (every new veth brings an fe80::/64 of its own).

import { MAIN_TABLE } from '../model.js';
import { RTM_DELROUTE, RTM_NEWROUTE, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE } from './constants.js';
import { readRoute } from './route.js';
import { NetlinkSocket } from './socket.js';

export interface RouteWatchOptions {
  /** Path of the network namespace to watch; default the process's own. */
  readonly netns?: string;
  /** felix's route protocol: its own writes are not news. */
  readonly protocol: number;
}

/** True for a destination no learned next hop resolves through. */
function ignored(dst: string): boolean {
  return dst.startsWith('ff') || /^fe[89ab]/.test(dst); // formatted addresses are lower case
}

/**
 * Calls `changed` (at most once a wake-up) when a route of another program changed in the main
 * table, or when the kernel dropped notices. Returns the function that stops watching, or
 * undefined when the netlink addon cannot join groups or have the event loop poll (an old build).
 */
export function watchRoutes(o: RouteWatchOptions, changed: () => void): (() => void) | undefined {
  const sock = NetlinkSocket.open({ netns: o.netns, bufferBytes: 8 << 20 });
  if (!sock.canJoin || !sock.canWatch) {
    sock.close();
    return undefined;
  }
  sock.join(RTNLGRP_IPV4_ROUTE);
  sock.join(RTNLGRP_IPV6_ROUTE);
  const noName = () => '';
  const read = () => {
    let news = false;
    const complete = sock.drain((type, buf, s, e) => {
      if (news || (type !== RTM_NEWROUTE && type !== RTM_DELROUTE)) return;
      const r = readRoute(buf, s, e, noName, undefined, MAIN_TABLE);
      if (r && r.protocol !== o.protocol && !ignored(r.dst)) news = true;
    });
    if (news || !complete) changed();
  };
  sock.watch(read);
  return () => sock.close();
}
