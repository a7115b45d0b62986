// Connection collision resolution (RFC 4271 §6.8, RFC 6286 §2.3). Pure: the session layer,
// which holds both connections' FSMs, asks which one to drop and sends that FSM an
// OpenCollisionDump event (which sends Cease 6/7 and goes to Idle).
import type { FsmStateName } from './types.js';

/** Who initiated a TCP connection: we did (outgoing) or the peer did (incoming). */
export type ConnectionDirection = 'outgoing' | 'incoming';

export interface CollisionIdentity {
  /** Our BGP Identifier, a 32-bit unsigned integer (a signed reading is accepted too). */
  readonly localBgpId: number;
  /** The BGP Identifier in the OPEN just received. */
  readonly remoteBgpId: number;
  /** Only consulted when the identifiers are equal, which RFC 6286 allows across ASes. */
  readonly localAs?: number;
  readonly remoteAs?: number;
}

/**
 * The connection that survives a collision: the one initiated by the speaker with the higher
 * BGP Identifier, compared as unsigned integers; with equal identifiers, the one initiated by
 * the speaker with the larger AS number. `null` when both are equal too: that OPEN breaks
 * RFC 6286 and should have been refused with 2/3 Bad BGP Identifier.
 */
export function collisionWinner(ids: CollisionIdentity): ConnectionDirection | null {
  // >>> 0 so that an identifier read with readInt32 compares as the RFC says (unsigned).
  const local = ids.localBgpId >>> 0;
  const remote = ids.remoteBgpId >>> 0;
  if (local !== remote) return local > remote ? 'outgoing' : 'incoming';
  if (ids.localAs === undefined || ids.remoteAs === undefined || ids.localAs === ids.remoteAs) return null;
  return ids.localAs > ids.remoteAs ? 'outgoing' : 'incoming';
}

export interface CollisionCase extends CollisionIdentity {
  /** The connection to the same peer that was there first. */
  readonly existing: { readonly direction: ConnectionDirection; readonly state: FsmStateName };
  /** The connection the OPEN just arrived on. */
  readonly newDirection: ConnectionDirection;
  /** The existing connection's CollisionDetectEstablishedState attribute. */
  readonly collisionDetectEstablishedState?: boolean;
}

/** Which connection gets OpenCollisionDump; `none` when the two do not collide. */
export type CollisionOutcome = 'none' | 'dumpExisting' | 'dumpNew';

/**
 * Call when an OPEN passed its checks on one connection while another connection to the
 * same peer exists. A collision is only visible once the other connection has sent its OPEN
 * (OpenSent, which RFC 4271 makes optional and we include since the OPEN just received
 * identifies the peer, or OpenConfirm). An Established session wins unless the
 * CollisionDetectEstablishedState attribute says to compare identifiers there too.
 */
export function resolveCollision(c: CollisionCase): CollisionOutcome {
  const { state, direction } = c.existing;
  if (state === 'Idle' || state === 'Connect' || state === 'Active') return 'none';
  if (state === 'Established' && !c.collisionDetectEstablishedState) return 'dumpNew';
  if (direction === c.newDirection) {
    // Two connections opened by the same side: that side has given up on the first one.
    return state === 'Established' ? 'dumpNew' : 'dumpExisting';
  }
  const winner = collisionWinner(c);
  // Equal identity: nothing to choose by; keeping what is there disturbs least.
  if (winner === null) return 'dumpNew';
  return winner === direction ? 'dumpNew' : 'dumpExisting';
}
