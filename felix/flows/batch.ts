// A batch of flow log messages as the addon reads them (felix/native/flows.c): one row of
// numbers per conntrack event or logged packet, in a Float64Array reused from one read to the
// next, so a message costs no attribute walk and no object until the correlator needs one.
// Addresses come as 32-bit words and become text through a bounded cache: a node's flows
// name the same few hundred addresses over and over.

import { formatIpv4Number, formatIpv6 } from '../../ip/index.js';
import type { FlowTuple } from './tuple.js';

/** Numbers per row, and the header before the first row (H). */
export const ROW = 38;
export const HEADER = 8;

/** The header's numbers. */
export const H = {
  /** Bit 1: the kernel dropped messages (ENOBUFS); bit 2: a datagram did not fit its slot. */
  LOST: 0,
  /** ROW as the addon has it. */
  ROW: 1,
  /** Flows the fold still holds (aggregates not yet due, NEWs waiting for their Allow). */
  HELD: 2,
  /** The numbers a fold takes. */
  FOLD_SIZE: 3,
  /** Conntrack events and logged packets read, folded or not. */
  EVENTS: 4,
  PACKETS: 5,
  /** 1 when the read stopped with its buffers full, not because the queue was empty: read again before resting. */
  MORE: 6,
  /** HEADER as the addon has it. */
  HEADER: 7,
} as const;

/** A row's fields: the C side's enum, in the same order. */
export const F = {
  KIND: 0,
  PROTO: 1,
  /** conntrack's id of the entry (events only). */
  ID: 2,
  STATUS: 3,
  MARK: 4,
  /** Both directions' counts (DESTROY, with accounting on); a logged packet's IP length in BYTES. */
  PACKETS: 5,
  BYTES: 6,
  FAMILY: 7,
  /** Tuple A: conntrack's original tuple; a logged packet's headers (after DNAT). */
  A_SRC: 8,
  A_DST: 12,
  A_SPORT: 16,
  A_DPORT: 17,
  /** Tuple B: conntrack's reply tuple. */
  B_SRC: 18,
  B_DST: 22,
  B_SPORT: 26,
  B_DPORT: 27,
  PREFIX_AT: 28,
  PREFIX_LEN: 29,
  /** The flow as the forward hook saw it, hashed to 52 bits: what joins an Allow's packet to its NEW. */
  KEY: 30,
  IFINDEX: 31,
  /** What names the flow apart from its client's port, hashed to 52 bits (the agent's cache of its naming). */
  NAME: 32,
  /**
   * When conntrack made the entry, in ms since the epoch (net.netfilter.nf_conntrack_timestamp);
   * 0 without. An aggregate's: its first flow's start (its earliest, of ends).
   */
  START: 33,
  /** An aggregate's flows, and how its rule is named (DECIDED_*) by DECISION. */
  COUNT: 34,
  DECIDED: 35,
  DECISION: 36,
  /** When an aggregate's last flow was read, ms since the epoch. */
  LAST: 37,
} as const;

export const KIND_NEW = 1;
export const KIND_DESTROY = 2;
export const KIND_PACKET = 3;
/** Aggregates of the addon's fold: connections started, ended, packets refused. */
export const KIND_STARTS = 4;
export const KIND_ENDS = 5;
export const KIND_DENIALS = 6;

/** How an aggregate names its rule: none did; a log prefix (PREFIX_AT in the fold); an Allow's number in the conntrack mark. */
export const DECIDED_NONE = 0;
export const DECIDED_PREFIX = 1;
export const DECIDED_MARK = 2;

/** The fold's settings: the first numbers of its Float64Array, written by the reader before each read. */
export const CFG = { FLAGS: 0, NUMBER_BITS: 1, STAGED_BIT: 2, SHIFT: 3, PENDING_MS: 4, HOLD_MS: 5 } as const;

/** CFG.FLAGS: the addon's FOLD_* (felix/native/flows.c). */
export const FOLD = { JOIN: 1, MARK: 2, PORT_ALLOW: 4, PORT_DENY: 8, JS_PENDING: 16, JS_LIVE: 32 } as const;

/** Rows one read may fill: the addon stops when fewer than 1,024 are left. */
export const BATCH_ROWS = 8_192;

const MAX_NAMES = 65_536;

/** Address text for the rows' words, cached (v4) and bounded. */
export class AddressNames {
  private readonly v4 = new Map<number, string>();
  private readonly scratch = Buffer.alloc(16);

  /** The address in `rows` at `at` (four words; a v4 address is the first). */
  name(rows: Float64Array, at: number, family: number): string {
    if (family === 4) {
      const n = rows[at]!;
      // As a small integer (the address's bits as int32): a Map hashes it without boxing a double.
      const k = n | 0;
      let s = this.v4.get(k);
      if (s === undefined) {
        if (this.v4.size >= MAX_NAMES) this.v4.clear();
        s = formatIpv4Number(n);
        this.v4.set(k, s);
      }
      return s;
    }
    for (let i = 0; i < 4; i++) this.scratch.writeUInt32BE(rows[at + i]!, i * 4);
    return formatIpv6(this.scratch, 0);
  }

  /** The tuple whose source starts at `src` (destination 4 words on, ports 8 and 9 on). */
  tuple(rows: Float64Array, row: number, src: number): FlowTuple {
    const family = rows[row + F.FAMILY]!;
    return {
      proto: rows[row + F.PROTO]!,
      src: this.name(rows, row + src, family),
      dst: this.name(rows, row + src + 4, family),
      sport: rows[row + src + 8]!,
      dport: rows[row + src + 9]!,
    };
  }
}
