// Per-peer maximum-prefix (FRR's `neighbor X maximum-prefix`, BIRD's `import limit`, GoBGP's
// `max-prefixes`): a warning when a peer's count of a family crosses a share of its limit, and
// beyond the limit a Cease 6/1 (RFC 4486) that drops the session and its routes and keeps the
// peer down for a while, or until an operator clears it.
//
// What is counted is what the peer holds in our Adj-RIB-In after import policy: its accepted
// paths of the family (each ADD-PATH path counts). FRR's `maximum-prefix` (without `force`)
// and BIRD's `import limit` count the same; a prefix the policy refuses costs no memory here,
// as nothing of it is kept.
import { type AddressFamily, Safi, afiOf } from '../codec/index.js';

export interface MaxPrefixLimit {
  /** The most paths of the family the peer may have accepted at once. */
  limit: number;
  /** Percent of `limit` at which a warning is given (once each time the count rises past it). Default 75. */
  warningThreshold?: number;
  /**
   * Seconds the peer stays down (Idle, refusing its connections) after exceeding the limit,
   * before the session starts again. 0: down until `clearMaxPrefix`. Default 0, as FRR.
   */
  restartAfter?: number;
  /** Beyond the limit only warn: the session and its routes stay. Default false. */
  warningOnly?: boolean;
}

export type MaxPrefixes = Partial<Record<AddressFamily, MaxPrefixLimit>>;

/**
 * The speaker-wide guard on memory: the most paths all peers together may have in the
 * Adj-RIB-In. The peer whose UPDATE takes the total past it gets Cease 6/8 (Out of Resources,
 * RFC 4486), loses its routes and is held down like a peer over its own limit.
 */
export interface MaxRoutes {
  limit: number;
  /** Seconds the peer stays down; 0: until `clearMaxPrefix`. Default 60. */
  restartAfter?: number;
}

/** What a limit saw: the threshold crossed (a warning), the peer's limit exceeded, or the speaker's (`maxRoutes`). */
export interface MaxPrefixEvent {
  family: AddressFamily;
  kind: 'threshold' | 'exceeded' | 'maxRoutes';
  count: number;
  limit: number;
  /** For `exceeded`: 'warning' under warningOnly, else the session was stopped with Cease 6/1. */
  action: 'warning' | 'shutdown';
  /** For a shutdown: seconds until the session starts again; 0 means until cleared. */
  restartAfter?: number;
  message: string;
}

/** A peer's limits as status shows them, and the hold-down it is in, if any. */
export interface MaxPrefixStatus {
  limits: {
    family: AddressFamily;
    limit: number;
    warningThreshold: number;
    restartAfter: number;
    warningOnly: boolean;
    /** Above the warning threshold now (and not yet back under it). */
    warned: boolean;
  }[];
  /** Down after exceeding a limit: until `restartAt` (ms since the epoch), or until cleared when it is absent. */
  heldDown?: { family: AddressFamily; message: string; restartAt?: number };
}

const FAMILIES: readonly AddressFamily[] = ['ipv4-unicast', 'ipv6-unicast'];

/** Checks a peer's `maxPrefixes`, naming the field (`field` is e.g. "peer 10.0.0.2 maxPrefixes"). */
export function checkMaxPrefixes(field: string, v: unknown): MaxPrefixes {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new TypeError(`${field}: a mapping of family to { limit, ... }`);
  for (const [f, l] of Object.entries(v)) {
    const at = `${field}.${f}`;
    if (!FAMILIES.includes(f as AddressFamily)) throw new TypeError(`${at}: unknown family (ipv4-unicast or ipv6-unicast)`);
    if (typeof l !== 'object' || l === null || Array.isArray(l))
      throw new TypeError(`${at}: { limit, warningThreshold?, restartAfter?, warningOnly? }`);
    const limit = l as Record<string, unknown>;
    for (const k of Object.keys(limit)) {
      if (!['limit', 'warningThreshold', 'restartAfter', 'warningOnly'].includes(k)) throw new TypeError(`${at}.${k}: unknown field`);
    }
    integer(`${at}.limit`, limit.limit, 1, 0xffffffff);
    if (limit.warningThreshold !== undefined) integer(`${at}.warningThreshold`, limit.warningThreshold, 1, 100);
    if (limit.restartAfter !== undefined) integer(`${at}.restartAfter`, limit.restartAfter, 0, 0x7fffffff / 1000);
    if (limit.warningOnly !== undefined && typeof limit.warningOnly !== 'boolean')
      throw new TypeError(`${at}.warningOnly: ${JSON.stringify(limit.warningOnly)} is not true or false`);
    if (limit.warningOnly === true && limit.restartAfter !== undefined)
      throw new TypeError(`${at}.restartAfter: a warningOnly limit never stops the session`);
  }
  return v as MaxPrefixes;
}

export function checkMaxRoutes(field: string, v: unknown): MaxRoutes {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new TypeError(`${field}: { limit, restartAfter? }`);
  const m = v as Record<string, unknown>;
  for (const k of Object.keys(m)) if (k !== 'limit' && k !== 'restartAfter') throw new TypeError(`${field}.${k}: unknown field`);
  integer(`${field}.limit`, m.limit, 1, 0xffffffff);
  if (m.restartAfter !== undefined) integer(`${field}.restartAfter`, m.restartAfter, 0, 0x7fffffff / 1000);
  return v as MaxRoutes;
}

/**
 * The speaker's maxRoutes, after an UPDATE from a peer holding `own` paths per family: the
 * event to act on when `total` (every peer's paths) is past the limit.
 */
export function maxRoutesExceeded(m: MaxRoutes, total: number, own: Record<AddressFamily, number>): MaxPrefixEvent | undefined {
  if (total <= m.limit) return undefined;
  const family: AddressFamily = own['ipv6-unicast'] > own['ipv4-unicast'] ? 'ipv6-unicast' : 'ipv4-unicast';
  const restartAfter = m.restartAfter ?? 60;
  return {
    family,
    kind: 'maxRoutes',
    count: total,
    limit: m.limit,
    action: 'shutdown',
    restartAfter,
    message: `Adj-RIB-In full: ${total} paths from all peers, maxRoutes ${m.limit}; session down ${restartAfter ? `for ${restartAfter} s` : 'until cleared'}`,
  };
}

function integer(field: string, v: unknown, min: number, max: number): void {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
    throw new TypeError(`${field}: ${JSON.stringify(v)} is not a whole number in ${min}..${Math.floor(max)}`);
}

/** RFC 4486 §4: the data of a Cease 6/1: AFI (2 octets), SAFI (1 octet), upper bound (4 octets). */
export function maxPrefixData(family: AddressFamily, limit: number): Uint8Array {
  const b = Buffer.alloc(7);
  b.writeUInt16BE(afiOf(family), 0);
  b.writeUInt8(Safi.UNICAST, 2);
  b.writeUInt32BE(limit, 3);
  return b;
}

/**
 * One peer's limits: fed the peer's counts after each UPDATE, it says what to do, and it
 * holds the restart timer of a peer it stopped.
 */
export class MaxPrefixGuard {
  private readonly warned = new Set<AddressFamily>();
  private readonly over = new Set<AddressFamily>();
  private timer: NodeJS.Timeout | undefined;
  /** Set while the peer is held down for a limit it exceeded. */
  tripped: MaxPrefixEvent | undefined;
  /** When a held-down peer starts again (ms since the epoch); undefined when it waits to be cleared. */
  restartAt: number | undefined;

  constructor(readonly limits: MaxPrefixes) {}

  /**
   * Compares the counts with the limits; returns what happened, at most one event per family
   * per crossing. An `exceeded` with action 'shutdown' is for the caller to carry out (stop
   * the session with `maxPrefixData`, then `holdDown`).
   */
  check(count: (family: AddressFamily) => number): MaxPrefixEvent[] {
    const events: MaxPrefixEvent[] = [];
    for (const family of FAMILIES) {
      const l = this.limits[family];
      if (l === undefined) continue;
      const n = count(family);
      const threshold = Math.ceil((l.limit * (l.warningThreshold ?? 75)) / 100);
      if (n > l.limit) {
        if (this.over.has(family)) continue;
        this.over.add(family);
        this.warned.add(family);
        const action = l.warningOnly ? 'warning' : 'shutdown';
        const restartAfter = action === 'shutdown' ? (l.restartAfter ?? 0) : undefined;
        const then = action === 'warning' ? 'kept (warningOnly)' : restartAfter ? `down for ${restartAfter} s` : 'down until cleared';
        events.push({
          family,
          kind: 'exceeded',
          count: n,
          limit: l.limit,
          action,
          restartAfter,
          message: `maximum prefixes exceeded: ${n} ${family} paths, limit ${l.limit}; session ${then}`,
        });
        continue;
      }
      this.over.delete(family);
      if (n >= threshold) {
        if (this.warned.has(family)) continue;
        this.warned.add(family);
        events.push({
          family,
          kind: 'threshold',
          count: n,
          limit: l.limit,
          action: 'warning',
          message: `${n} ${family} paths reached ${l.warningThreshold ?? 75}% of the limit ${l.limit}`,
        });
      } else {
        this.warned.delete(family);
      }
    }
    return events;
  }

  /** The session is stopped for `e`: start it again (`restart`) after its restartAfter, if any. */
  holdDown(e: MaxPrefixEvent, restart: () => void): void {
    this.tripped = e;
    this.warned.clear();
    this.over.clear();
    clearTimeout(this.timer);
    this.restartAt = undefined;
    if (!e.restartAfter) return;
    this.restartAt = Date.now() + e.restartAfter * 1000;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.clear();
      restart();
    }, e.restartAfter * 1000);
    this.timer.unref();
  }

  /** Ends a hold-down (the timer, or an operator's clear). Returns whether one was in force. */
  clear(): boolean {
    const was = this.tripped !== undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.tripped = undefined;
    this.restartAt = undefined;
    return was;
  }

  /** A new session starts counting afresh (its routes were dropped with the old one). */
  sessionDown(): void {
    this.warned.clear();
    this.over.clear();
  }

  status(): MaxPrefixStatus {
    const limits = FAMILIES.flatMap((family) => {
      const l = this.limits[family];
      if (l === undefined) return [];
      return [
        {
          family,
          limit: l.limit,
          warningThreshold: l.warningThreshold ?? 75,
          restartAfter: l.restartAfter ?? 0,
          warningOnly: l.warningOnly === true,
          warned: this.warned.has(family),
        },
      ];
    });
    const t = this.tripped;
    return t ? { limits, heldDown: { family: t.family, message: t.message, restartAt: this.restartAt } } : { limits };
  }
}
