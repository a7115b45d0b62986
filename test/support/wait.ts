// Bounded polling: every wait in a network test has a deadline and says, when it gives up,
// what it was waiting for and what it saw last, so a failure explains itself.

export interface WaitOptions<T> {
  /** What the caller waits for, in words: it opens the timeout message. */
  what: string;
  timeoutMs?: number;
  intervalMs?: number;
  /** When given, the probe's value must satisfy it; otherwise any truthy value ends the wait. */
  until?: (value: T) => boolean;
}

export class WaitTimeoutError extends Error {
  constructor(
    message: string,
    readonly lastValue: unknown,
  ) {
    super(message);
    this.name = 'WaitTimeoutError';
  }
}

/**
 * Calls `probe` every `intervalMs` until its value is accepted, and returns that value.
 * A probe that throws counts as "not yet" (a daemon's socket may not exist yet); the last
 * error is reported if the deadline passes.
 */
export async function waitFor<T>(probe: () => T | Promise<T>, options: WaitOptions<T>): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const intervalMs = options.intervalMs ?? 250;
  const accept = options.until ?? ((value: T) => Boolean(value));
  const deadline = Date.now() + timeoutMs;
  let last: { value?: T; error?: unknown } = {};
  for (;;) {
    try {
      const value = await probe();
      last = { value };
      if (accept(value)) return value;
    } catch (error) {
      last = { error };
    }
    if (Date.now() >= deadline) {
      const seen = 'error' in last ? `probe threw: ${describe(last.error)}` : `last value: ${describe(last.value)}`;
      throw new WaitTimeoutError(`timed out after ${timeoutMs} ms waiting for ${options.what}; ${seen}`, last.error ?? last.value);
    }
    await sleep(Math.min(intervalMs, Math.max(0, deadline - Date.now())));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function describe(value: unknown): string {
  let text: string;
  if (value instanceof Error) text = value.message;
  else if (typeof value === 'string') text = JSON.stringify(value);
  else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  return text.length > 2000 ? `${text.slice(0, 2000)}… (${text.length} chars)` : text;
}
