// Builders for RIB tests: UPDATEs as the codec would hand them over, and peers.
import assert from 'node:assert/strict';
import type { AsPathSegment, BgpMessage, CodecOptions, Nlri, PathAttributes, UpdateMessage } from '../../bgp/codec/index.js';
import { decodeMessage } from '../../bgp/codec/index.js';
import type { AdjRibOut, Rib, RibPeer } from '../../bgp/rib/index.js';

export const seq = (...asns: number[]): AsPathSegment[] => [{ type: 'sequence', asns }];

export function v4Update(
  prefixes: Array<string | Nlri>,
  attributes: PathAttributes = {},
  withdrawn: Array<string | Nlri> = [],
): UpdateMessage {
  const nlri = prefixes.map((p) => (typeof p === 'string' ? { prefix: p } : p));
  const attrs: PathAttributes = nlri.length > 0 ? { origin: 'igp', asPath: seq(65001), nextHop: '192.0.2.1', ...attributes } : attributes;
  return { type: 'update', withdrawn: withdrawn.map((p) => (typeof p === 'string' ? { prefix: p } : p)), attributes: attrs, nlri };
}

export function v6Update(
  prefixes: Array<string | Nlri>,
  attributes: PathAttributes = {},
  nextHop = '2001:db8::1',
  linkLocal?: string,
): UpdateMessage {
  const nlri = prefixes.map((p) => (typeof p === 'string' ? { prefix: p } : p));
  return {
    type: 'update',
    withdrawn: [],
    nlri: [],
    attributes: {
      origin: 'igp',
      asPath: seq(65001),
      ...attributes,
      mpReach: { afi: 2, safi: 1, nextHop, linkLocalNextHop: linkLocal, nlri },
    },
  };
}

/** Pulls everything the queue has and decodes it. */
export function drain(out: AdjRibOut, options: CodecOptions = {}, budget = 1 << 20): { raw: Buffer[]; messages: BgpMessage[] } {
  const raw: Buffer[] = [];
  for (let i = 0; i < 100000; i++) {
    const b = out.pull(budget);
    if (b.length === 0) break;
    raw.push(...b);
  }
  return { raw, messages: raw.map((b) => decodeMessage(b, options)) };
}

/** The UPDATEs among the messages, End-of-RIB markers left out. */
export function updatesOf(messages: BgpMessage[]): UpdateMessage[] {
  return messages.filter((m): m is UpdateMessage => m.type === 'update' && !isEor(m));
}

export function isEor(m: BgpMessage): boolean {
  if (m.type !== 'update' || m.nlri.length || m.withdrawn.length) return false;
  const a = m.attributes;
  const keys = Object.keys(a).filter((k) => k !== 'wire' && a[k as keyof PathAttributes] !== undefined);
  return keys.length === 0 || (keys.length === 1 && a.mpUnreach !== undefined && (a.mpUnreach.withdrawn ?? []).length === 0);
}

/** Every announced prefix (family-agnostic) with its attributes, in arrival order. */
export function announced(messages: BgpMessage[]): Array<{ prefix: string; pathId?: number; attributes: PathAttributes }> {
  const out: Array<{ prefix: string; pathId?: number; attributes: PathAttributes }> = [];
  for (const m of updatesOf(messages)) {
    for (const n of m.nlri) out.push({ prefix: n.prefix, pathId: n.pathId, attributes: m.attributes });
    for (const n of m.attributes.mpReach?.nlri ?? []) out.push({ prefix: n.prefix, pathId: n.pathId, attributes: m.attributes });
  }
  return out;
}

export function withdrawnOf(messages: BgpMessage[]): Nlri[] {
  const out: Nlri[] = [];
  for (const m of updatesOf(messages)) {
    out.push(...m.withdrawn);
    out.push(...(m.attributes.mpUnreach?.withdrawn ?? []));
  }
  return out;
}

/**
 * Replaying an MRT dump into a RIB: the RIB peer of a record's collector session (address, AS,
 * 2- or 4-octet), registered with both unicast families the first time `peers` meets it.
 */
export function mrtPeer(rib: Rib, peers: Map<string, RibPeer>, r: { peerIp: string; peerAs: number; fourOctetAs: boolean }): RibPeer {
  const name = `${r.peerIp} AS${r.peerAs} ${r.fourOctetAs ? 4 : 2}`;
  let peer = peers.get(name);
  if (peer === undefined) {
    peer = rib.addPeer({
      address: r.peerIp,
      asn: r.peerAs,
      routerId: `10.0.${peers.size >> 8}.${peers.size & 255}`,
      families: ['ipv4-unicast', 'ipv6-unicast'],
      fourOctetAs: r.fourOctetAs,
    });
    peers.set(name, peer);
  }
  return peer;
}

/** What the prefix indexes (V4Index, V6Index) have in common. */
export interface PrefixIndex<K> {
  readonly size: number;
  get(key: K): number | undefined;
  set(key: K, n: number): void;
  delete(key: K): void;
}

/**
 * Runs 200,000 random inserts, overwrites and deletions of keys from `pool` on `index` and on a
 * Map, checking every 1,000 steps that they agree; then deletes every key. A fixed generator
 * from `seed`: the same sequence every run.
 */
export function agreesWithMap<K>(index: PrefixIndex<K>, pool: readonly K[], seed: number): void {
  const rand = (n: number): number => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed % n;
  };
  const ref = new Map<K, number>();
  for (let step = 0; step < 200_000; step++) {
    const key = pool[rand(pool.length)];
    if (rand(3) === 0) {
      index.delete(key);
      ref.delete(key);
    } else {
      index.set(key, step);
      ref.set(key, step);
    }
    if (step % 1000 === 0) {
      assert.equal(index.size, ref.size);
      for (const k of pool) assert.equal(index.get(k), ref.get(k), `step ${step}`);
    }
  }
  for (const k of pool) assert.equal(index.get(k), ref.get(k));
  for (const k of pool) index.delete(k);
  assert.equal(index.size, 0);
  for (const k of pool) assert.equal(index.get(k), undefined);
}
