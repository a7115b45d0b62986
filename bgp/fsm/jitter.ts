// A tiny seeded generator, so that jittered timers are a pure function of the FSM state.

/** One xorshift32 step: the next generator state (never 0 from a non-zero state). */
export function nextRng(x: number): number {
  x ^= x << 13;
  x ^= x >>> 17;
  x ^= x << 5;
  return x >>> 0;
}

/** A uniform fraction in [0, 1) from a generator state. */
export function rngFraction(x: number): number {
  return x / 0x1_0000_0000;
}

/**
 * `seconds` shortened by up to `jitter` of itself (RFC 4271 §10: factor 0.75..1), rounded
 * to the millisecond, with the generator state to keep.
 */
export function jittered(seconds: number, jitter: number, rng: number): { seconds: number; rng: number } {
  if (jitter === 0 || seconds === 0) return { seconds, rng };
  const next = nextRng(rng);
  const factor = 1 - jitter * rngFraction(next);
  return { seconds: Math.round(seconds * factor * 1000) / 1000, rng: next };
}
