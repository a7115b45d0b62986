// Hold time negotiation (RFC 4271 §4.2, §6.2, §10).

/** RFC 4271 §6.2: a Hold Time of one or two seconds MUST be rejected (2/6). */
export function isAcceptableHoldTime(peerHoldTime: number): boolean {
  return Number.isInteger(peerHoldTime) && peerHoldTime >= 0 && peerHoldTime <= 65535 && peerHoldTime !== 1 && peerHoldTime !== 2;
}

/** The smaller of the two offers; 0 means neither side sends keepalives nor runs a hold timer. */
export function negotiateHoldTime(localHoldTime: number, peerHoldTime: number): number {
  return Math.min(localHoldTime, peerHoldTime);
}

/**
 * KeepaliveTime for a negotiated hold time: a third of it, rounded down (at least 1 s,
 * since an acceptable non-zero hold time is at least 3), or the configured keepalive
 * time when that is smaller. 0 when the hold time is 0.
 */
export function keepaliveTimeFor(negotiatedHoldTime: number, configuredKeepalive: number | null): number {
  if (negotiatedHoldTime === 0) return 0;
  const third = Math.floor(negotiatedHoldTime / 3);
  return configuredKeepalive === null ? third : Math.min(configuredKeepalive, third);
}
