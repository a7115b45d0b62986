// Loads the N-API netlink addon (felix/native), built by `npm install` through node-gyp.
// When it is missing the caller gets the reason, and can fall back to `ip -batch`.

import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { existsSync } from 'node:fs';

export interface NetlinkNative {
  open(protocol: number, bufferBytes: number): number;
  send(fd: number, data: Buffer, length: number): number;
  recv(fd: number, into: Buffer, timeoutMs: number): number;
  close(fd: number): void;
  /** Joins an rtnetlink multicast group; absent from an addon built before it. */
  join?(fd: number, group: number): void;
  /** Calls `ready` on the event loop whenever `fd` is readable; absent from an addon built before it. */
  watch?(fd: number, ready: (status: number) => void, keepAlive: boolean): WatchHandle;
  unwatch?(handle: WatchHandle): void;
  /**
   * Sends `request` (unless null) and reads as `recv` does into rx[0, length), both on libuv's
   * thread pool; then `done(errno, bytes)` on the event loop (errno negated: the send failed).
   * Absent from an addon built before it.
   */
  readAsync?(
    fd: number,
    rx: Buffer,
    length: number,
    timeoutMs: number,
    request: Buffer | null,
    done: (errno: number, bytes: number) => void,
  ): void;
  /** Reads a flow log socket's queued messages into rows (felix/flows/batch.ts); absent from an addon built before it. */
  flowRead?(fd: number, rx: Buffer, out: Float64Array): number;
  enterNetns(path: string): number;
  leaveNetns(previous: number): void;
}

/** The addon's handle on one watched socket. */
export type WatchHandle = { readonly __watch: unique symbol };

let cached: NetlinkNative | null | undefined;
let loadError = '';

const here = dirname(fileURLToPath(import.meta.url));
// From the sources (felix/netlink) and from the compiled package (dist/felix/netlink): the
// addon is always built in <package>/felix/native by the install script.
const CANDIDATES = [
  join(here, '..', 'native', 'build', 'Release', 'netlink.node'),
  join(here, '..', '..', '..', 'felix', 'native', 'build', 'Release', 'netlink.node'),
];
const ADDON = CANDIDATES.find((p) => existsSync(p)) ?? CANDIDATES[0];

/** The addon, or null when it is not built (see nativeLoadError()). */
export function loadNative(): NetlinkNative | null {
  if (cached !== undefined) return cached;
  try {
    cached = createRequire(import.meta.url)(ADDON) as NetlinkNative;
  } catch (e) {
    cached = null;
    loadError = `felix netlink addon not available at ${ADDON} (${(e as Error).message.split('\n')[0]}); build it with \`npm run build:native\``;
  }
  return cached;
}

export function nativeLoadError(): string {
  loadNative();
  return loadError;
}

/** Runs `f` (synchronous code only) with this thread inside the network namespace at `path`. */
export function inNetns<T>(path: string | undefined, f: () => T): T {
  if (!path) return f();
  const n = loadNative();
  if (!n) throw new Error(nativeLoadError());
  const previous = n.enterNetns(path);
  try {
    return f();
  } finally {
    n.leaveNetns(previous);
  }
}
