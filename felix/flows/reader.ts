// The dataplane's flow events, as they happen: conntrack's NEW and DESTROY (a NETLINK_NETFILTER
// socket in those two multicast groups) and the packets felix's flow log rules hand to
// nfnetlink_log (a second socket bound to their group). Both sockets are woken by the event loop
// (the addon's uv_poll), never a timer; each wake-up reads a bounded amount, so a flood takes
// turns with the rest of the process instead of holding it. What the kernel cannot queue it drops
// and says so (ENOBUFS): counted in `lost`, never buffered without bound here.

import { writeFileSync } from 'node:fs';
import { inNetns } from '../netlink/native.js';
import { NETLINK_NETFILTER } from '../netlink/nf-constants.js';
import { NetlinkSocket } from '../netlink/socket.js';
import { NFNLGRP_CONNTRACK_DESTROY, NFNLGRP_CONNTRACK_NEW } from './constants.js';
import { type ConntrackEvent, readConntrackEvent } from './conntrack-event.js';
import { type LoggedPacket, nflogBind, readLoggedPacket } from './nflog.js';

export interface FlowReaderOptions {
  /** Path of the network namespace to read; default the process's own. */
  readonly netns?: string;
  /** The nfnetlink_log group felix's flow log rules name. */
  readonly group: number;
  /** Turn on conntrack's byte and packet accounting (net.netfilter.nf_conntrack_acct) in the namespace. Default true. */
  readonly accounting?: boolean;
  /** Receive buffers read per wake-up and socket before the event loop gets a turn. Default 1 (up to 4 MiB of messages). */
  readonly readsPerWake?: number;
}

export interface FlowReaderStats {
  conntrackEvents: number;
  loggedPackets: number;
  /** Times the kernel dropped messages it had no room to queue. */
  lost: number;
}

/** Sets net.netfilter.nf_conntrack_acct in the namespace; false when it could not (reported by the caller). */
export function enableConntrackAccounting(netns?: string): boolean {
  try {
    inNetns(netns, () => writeFileSync('/proc/sys/net/netfilter/nf_conntrack_acct', '1'));
    return true;
  } catch {
    return false;
  }
}

export class FlowReader {
  readonly stats: FlowReaderStats = { conntrackEvents: 0, loggedPackets: 0, lost: 0 };
  /** Whether byte and packet counts will come (accounting was on or could be turned on). */
  readonly accounting: boolean;
  private closed = false;

  private constructor(
    private readonly conntrack: NetlinkSocket,
    private readonly nflog: NetlinkSocket,
    accounting: boolean,
  ) {
    this.accounting = accounting;
  }

  /**
   * Opens both sockets and starts reading: `onConntrack` and `onPacket` run on the event loop.
   * Throws when the addon cannot watch sockets, or the group is taken by another reader.
   */
  static async open(
    o: FlowReaderOptions,
    onConntrack: (e: ConntrackEvent) => void,
    onPacket: (p: LoggedPacket) => void,
  ): Promise<FlowReader> {
    const accounting = o.accounting === false ? false : enableConntrackAccounting(o.netns);
    const conntrack = NetlinkSocket.open({ protocol: NETLINK_NETFILTER, netns: o.netns, bufferBytes: 16 << 20 });
    let nflog: NetlinkSocket | undefined;
    try {
      if (!conntrack.canWatch || !conntrack.canJoin)
        throw new Error('the felix netlink addon cannot watch sockets: rebuild it with `npm run build:native`');
      conntrack.join(NFNLGRP_CONNTRACK_NEW);
      conntrack.join(NFNLGRP_CONNTRACK_DESTROY);
      nflog = NetlinkSocket.open({ protocol: NETLINK_NETFILTER, netns: o.netns, bufferBytes: 4 << 20 });
      const w = nflog.writer(256);
      nflogBind(w, { group: o.group });
      const r = await nflog.execute(w);
      const failed = [...r.errors].find((e) => e !== 0);
      if (failed !== undefined)
        throw new Error(`nfnetlink_log group ${o.group}: ${failed === 16 ? 'another program reads this group' : `errno ${failed}`}`);
    } catch (e) {
      conntrack.close();
      nflog?.close();
      throw e;
    }
    const reader = new FlowReader(conntrack, nflog, accounting);
    const reads = o.readsPerWake ?? 1;
    conntrack.watch(() =>
      reader.read(conntrack, reads, (buf, s, e) => {
        const ev = readConntrackEvent(buf, s, e);
        if (ev) {
          reader.stats.conntrackEvents++;
          onConntrack(ev);
        }
      }),
    );
    nflog.watch(() =>
      reader.read(nflog, reads, (buf, s, e) => {
        const p = readLoggedPacket(buf, s, e);
        if (p) {
          reader.stats.loggedPackets++;
          onPacket(p);
        }
      }),
    );
    return reader;
  }

  private read(sock: NetlinkSocket, reads: number, visit: (buf: Buffer, start: number, end: number) => void): void {
    if (this.closed) return;
    try {
      if (!sock.drain((_t, buf, s, e) => visit(buf, s, e), reads)) this.stats.lost++;
    } catch {
      // A read error other than ENOBUFS leaves the socket as it is; the next wake-up tries again.
      this.stats.lost++;
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.conntrack.close();
    this.nflog.close();
  }
}
