// A timer of any length. setTimeout fires at once past 2^31-1 ms (24.8 days), and a long-lived
// graceful restart stale time may be 16,777,215 s (194 days): such a wait is armed in steps.
const MAX_MS = 0x7fffffff;

export interface LongTimeout {
  clear(): void;
}

/** Calls `fn` once after `ms`; the timer does not keep the process alive. */
export function setLongTimeout(fn: () => void, ms: number): LongTimeout {
  const end = Date.now() + ms;
  let handle: NodeJS.Timeout;
  const arm = (): void => {
    const left = Math.max(0, end - Date.now());
    handle = setTimeout(left > MAX_MS ? arm : fn, Math.min(left, MAX_MS));
    handle.unref?.();
  };
  arm();
  return { clear: () => clearTimeout(handle) };
}
