// The monitor's bookkeeping: the IPv4 and IPv6 unicast routes the daemon under test has sent it,
// read straight from UPDATE bytes (no decoding into objects), and whether they match what a
// phase expects.
import { TAG_ASN, v6Key } from './wire.js';

/** An IPv4 prefix's key is a number (`v4Key`), an IPv6 prefix's a string (`v6Key`). */
export type RouteKey = number | string;

/** What the monitor must hold for a phase to be complete. */
export interface Expectation {
  /** Exact number of prefixes held. */
  size: number;
  /** Each of them with this round tag (64999:tag community; 0 = no tag community). */
  tag: number;
}

export class RouteMonitor {
  /** prefix key → round tag of its last announcement. */
  readonly routes = new Map<RouteKey, number>();
  private expected: Expectation = { size: 0, tag: 0 };
  /** Prefixes held whose tag is the expected one. */
  private matching = 0;
  messages = 0;
  announced = 0;
  withdrawn = 0;
  /** performance.now() of the last message that changed what the monitor holds. */
  lastChange = 0;
  /** performance.now() when the monitor first held exactly what is expected. */
  completeAt: number | undefined;

  expect(e: Expectation): void {
    this.expected = e;
    this.completeAt = undefined;
    let n = 0;
    for (const tag of this.routes.values()) if (tag === e.tag) n++;
    this.matching = n;
  }

  get size(): number {
    return this.routes.size;
  }

  get complete(): boolean {
    return this.routes.size === this.expected.size && this.matching === this.expected.size;
  }

  /** One whole UPDATE message, header included. */
  update(b: Buffer): void {
    this.messages++;
    let p = 19;
    const withdrawnEnd = p + 2 + b.readUInt16BE(p);
    p += 2;
    let changed = false;
    while (p < withdrawnEnd) {
      const len = b[p]!;
      changed = this.withdraw(readKey(b, p + 1, len)) || changed;
      p += 1 + ((len + 7) >> 3);
    }
    const attrEnd = p + 2 + b.readUInt16BE(p);
    p += 2;
    let tag = 0;
    // IPv6 unicast prefixes: where they start and end in MP_REACH_NLRI and MP_UNREACH_NLRI.
    let reach = 0;
    let reachEnd = 0;
    let unreach = 0;
    let unreachEnd = 0;
    while (p < attrEnd) {
      const flags = b[p]!;
      const type = b[p + 1]!;
      const extended = (flags & 0x10) !== 0;
      const length = extended ? b.readUInt16BE(p + 2) : b[p + 2]!;
      const value = p + (extended ? 4 : 3);
      if (type === 8) {
        for (let q = value; q + 4 <= value + length; q += 4) {
          if (b.readUInt16BE(q) === TAG_ASN) {
            tag = b.readUInt16BE(q + 2);
            break;
          }
        }
      } else if ((type === 14 || type === 15) && b.readUInt16BE(value) === 2 && b[value + 2] === 1) {
        if (type === 14) {
          reach = value + 4 + b[value + 3]! + 1; // next hop, then the reserved octet
          reachEnd = value + length;
        } else {
          unreach = value + 3;
          unreachEnd = value + length;
        }
      }
      p = value + length;
    }
    while (unreach < unreachEnd) {
      const len = b[unreach]!;
      changed = this.withdraw(v6Key(b, unreach + 1, len)) || changed;
      unreach += 1 + ((len + 7) >> 3);
    }
    const end = b.length;
    while (p < end) {
      const len = b[p]!;
      this.announce(readKey(b, p + 1, len), tag);
      p += 1 + ((len + 7) >> 3);
      changed = true;
    }
    while (reach < reachEnd) {
      const len = b[reach]!;
      this.announce(v6Key(b, reach + 1, len), tag);
      reach += 1 + ((len + 7) >> 3);
      changed = true;
    }
    if (changed) {
      this.lastChange = performance.now();
      if (this.completeAt === undefined && this.complete) this.completeAt = this.lastChange;
    }
  }

  private withdraw(key: RouteKey): boolean {
    const old = this.routes.get(key);
    if (old === undefined) return false;
    if (old === this.expected.tag) this.matching--;
    this.routes.delete(key);
    this.withdrawn++;
    return true;
  }

  private announce(key: RouteKey, tag: number): void {
    const old = this.routes.get(key);
    if (old === this.expected.tag) this.matching--;
    this.routes.set(key, tag);
    if (tag === this.expected.tag) this.matching++;
    this.announced++;
  }
}

function readKey(b: Buffer, p: number, len: number): number {
  const n = (len + 7) >> 3;
  let addr = 0;
  for (let i = 0; i < 4; i++) addr = addr * 256 + (i < n ? b[p + i]! : 0);
  // Bits past the length are cleared, as a daemon may clear them before passing the prefix on.
  if ((len & 7) !== 0) {
    const host = 2 ** (32 - len);
    addr = Math.floor(addr / host) * host;
  }
  return addr * 64 + len;
}
