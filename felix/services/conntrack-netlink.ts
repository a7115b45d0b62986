// Stale UDP entries deleted over ctnetlink from felix's own process, in the node's network
// namespace: a dump narrowed to the filters' ports (the kernel's walk off the event loop, on
// libuv's thread pool: Ctnetlink.list), then a deletion of the exact entries found. No
// process is started (a fork would make felix's next change dearer: its heap write-protected,
// its TLB flushed) and no package is needed beyond the netlink addon felix is built with.
import { formatAddress, parseAddress } from '../../ip/index.js';
import { errnoText } from '../errno.js';
import { type ConntrackEntry, type ConntrackQuery, Ctnetlink, IPPROTO_UDP } from '../netlink/ctnetlink.js';
import { loadNative, nativeLoadError } from '../netlink/native.js';
import type { ConntrackCleaner, ConntrackFilter } from './conntrack.js';

export interface NetlinkConntrackOptions {
  /** A network namespace: its name under /var/run/netns, or a path to it. Default: the process's own. */
  readonly netns?: string;
  /** Longest wait for the kernel's reply to one request. Default 5 s. */
  readonly replyTimeoutMs?: number;
  /** Told of a failure, its errno named (the addon missing: once). */
  readonly onError?: (message: string) => void;
}

/**
 * A dump walks the kernel's whole conntrack hash (every namespace's entries; 7 ms for 262,144
 * buckets on a loaded 2-core machine), whatever it returns. So the filters of a change are read
 * by port: one dump each of their ports (the kernel returns that port's UDP entries alone; a
 * port's frontends and nodePort share it), and past this many ports (a node's start) one dump
 * of the family's UDP entries, all matched here.
 */
const DUMP_PER_PORT_UP_TO = 4;

export class NetlinkConntrackCleaner implements ConntrackCleaner {
  /** Entries deleted so far. */
  deleted = 0;
  /** Set once the addon was found missing: nothing is tried after. */
  unavailable = false;
  private readonly netns: string | undefined;

  constructor(private readonly opts: NetlinkConntrackOptions = {}) {
    const ns = opts.netns;
    this.netns = ns === undefined ? undefined : ns.includes('/') ? ns : `/var/run/netns/${ns}`;
  }

  async clear(filters: readonly ConntrackFilter[]): Promise<number> {
    if (filters.length === 0 || this.unavailable) return 0;
    if (!loadNative()) {
      this.unavailable = true;
      this.report(`stale UDP entries to removed endpoints are left to time out: ${nativeLoadError()}`);
      return 0;
    }
    let ct: Ctnetlink;
    try {
      ct = Ctnetlink.open({ netns: this.netns, replyTimeoutMs: this.opts.replyTimeoutMs });
    } catch (e) {
      this.report(`conntrack: ${(e as Error).message}`);
      return 0;
    }
    try {
      const entries = await this.find(ct, filters);
      if (entries.length === 0) return 0;
      const r = await ct.delete(entries);
      this.deleted += r.deleted;
      if (r.failed.length) {
        const { entry, errno } = r.failed[0]!;
        this.report(
          `conntrack: ${r.failed.length} of ${entries.length} stale UDP entries not deleted, the first ${describe(entry)}: ${errnoText(errno)}`,
        );
      }
      return r.deleted;
    } catch (e) {
      this.report(`conntrack: ${(e as Error).message}`);
      return 0;
    } finally {
      ct.close();
    }
  }

  /** The entries the filters name, each once; a dump that fails is reported and the others still read. */
  private async find(ct: Ctnetlink, filters: readonly ConntrackFilter[]): Promise<ConntrackEntry[]> {
    const found = new Map<string, ConntrackEntry>();
    for (const family of [4, 6] as const) {
      const mine = filters.filter((f) => f.family === family);
      if (mine.length === 0) continue;
      const wanted = new Set(mine.map(filterKey));
      const ports = [...new Set(mine.map((f) => f.origDstPort))];
      const queries: ConntrackQuery[] =
        ports.length <= DUMP_PER_PORT_UP_TO
          ? ports.map((port) => {
              const only = mine.filter((f) => f.origDstPort === port);
              // One filter of the port: the kernel is given its addresses too.
              const f = only.length === 1 ? only[0]! : undefined;
              return { family, protocol: IPPROTO_UDP, orig: { dst: f?.origDst, dstPort: port }, reply: { src: f?.replySrc } };
            })
          : [{ family, protocol: IPPROTO_UDP }];
      for (const q of queries) {
        try {
          for (const e of await ct.list(q))
            if (wanted.has(entryKey(e.orig.dst, e)) || wanted.has(entryKey('*', e)))
              found.set(`${e.id} ${e.orig.src} ${e.orig.srcPort}`, e);
        } catch (e) {
          this.report(`conntrack: ${(e as Error).message}`);
        }
      }
    }
    return [...found.values()];
  }

  private report(message: string): void {
    this.opts.onError?.(message);
  }
}

/** A filter as a key: its frontend (in canonical text; `*`: any address), port and reply source. */
function filterKey(f: ConntrackFilter): string {
  const text = (a: string) => formatAddress(parseAddress(a));
  return `${f.origDst === undefined ? '*' : text(f.origDst)} ${f.origDstPort} ${text(f.replySrc)}`;
}

const entryKey = (dst: string, e: ConntrackEntry): string => `${dst} ${e.orig.dstPort} ${e.reply.src}`;

const describe = (e: ConntrackEntry): string =>
  `udp ${e.orig.src} ${e.orig.srcPort} → ${e.orig.dst} ${e.orig.dstPort} (replies from ${e.reply.src} ${e.reply.srcPort})`;
