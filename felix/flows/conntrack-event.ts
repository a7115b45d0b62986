// A conntrack event (ctnetlink NEW or DELETE, as the kernel multicasts them): its original and
// reply tuples (they differ when a Service's DNAT chose an endpoint), the packets and bytes of
// both directions (when net.netfilter.nf_conntrack_acct is on), its mark. The addon reads the
// messages (felix/native/flows.c, rows in batch.ts); this is the event the correlator takes.

import type { FlowTuple } from './tuple.js';

export interface ConntrackEvent {
  /** new: the connection's first packet was accepted; destroy: conntrack forgot it (closed or timed out). */
  readonly kind: 'new' | 'destroy';
  /** conntrack's id of the entry, the same in its NEW and its DESTROY. */
  readonly id: number;
  /** As the first packet came: the client's view (a Service's address when DNATed). */
  readonly orig: FlowTuple;
  /** As replies come: their source is the endpoint the connection went to. */
  readonly reply: FlowTuple;
  readonly status: number;
  readonly mark: number;
  /** Both directions; 0 without accounting. */
  readonly packets: number;
  readonly bytes: number;
  /** The flow as the forward hook saw its first packet, hashed (batch.ts F.KEY); tupleKey of it when absent. */
  readonly key?: number;
  /** When conntrack made the entry (ms since the epoch), with nf_conntrack_timestamp on. */
  readonly startMs?: number;
  /** What names the flow apart from its client's port, hashed (batch.ts F.NAME). */
  readonly nameKey?: number;
}
