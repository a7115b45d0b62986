// A network the speaker originates, as a configuration file lists it or a control call sends
// it: a prefix and the attributes it carries, checked field by field, then turned into the
// attributes the RIB takes.
import type { PathAttributes } from '../../bgp/index.js';
import { at, ConfigError, int, isObj, list, Mistakes, onlyKeys, prefix, type Obj } from './fields.js';

export interface NetworkConfig {
  prefix: string;
  med?: number;
  localPref?: number;
  /** "asn:value" or well-known names (no-export, no-advertise). */
  communities?: string[];
  /** "global:local1:local2". */
  largeCommunities?: string[];
}

const WELL_KNOWN: Readonly<Record<string, number>> = {
  'no-export': 0xffffff01,
  'no-advertise': 0xffffff02,
  'no-export-subconfed': 0xffffff03,
};

/** "asn:value" (each 0..65535) or a well-known name, as the 32-bit community. */
function community(c: unknown, path: string): number {
  if (typeof c === 'string' && WELL_KNOWN[c] !== undefined) return WELL_KNOWN[c];
  const m = typeof c === 'string' ? /^(\d+):(\d+)$/.exec(c) : null;
  if (!m || Number(m[1]) > 0xffff || Number(m[2]) > 0xffff) throw new ConfigError(`${path}: ${JSON.stringify(c)} is not asn:value`);
  return ((Number(m[1]) << 16) | Number(m[2])) >>> 0;
}

/** "global:local1:local2", each 0..4294967295. */
function largeCommunity(c: unknown, path: string): [number, number, number] {
  const parts = typeof c === 'string' ? c.split(':').map((x) => (/^\d+$/.test(x) ? Number(x) : NaN)) : [];
  if (parts.length !== 3 || parts.some((x) => !Number.isInteger(x) || x > 0xffffffff))
    throw new ConfigError(`${path}: ${JSON.stringify(c)} is not g:l1:l2`);
  return parts as [number, number, number];
}

const ATTRIBUTE_KEYS = ['med', 'localPref', 'communities', 'largeCommunities'];
const NETWORK_KEYS = new Set(['prefix', ...ATTRIBUTE_KEYS]);
const SHARED_KEYS = new Set(['prefixes', ...ATTRIBUTE_KEYS]);

type NetworkAttributes = Omit<NetworkConfig, 'prefix'>;

/** The attributes of `n`, each mistake noted in `m`. */
function attributes(n: Obj, path: string, m: Mistakes): NetworkAttributes {
  const out: NetworkAttributes = {};
  if (n.med !== undefined) out.med = m.take(() => int(n.med, at(path, 'med'), 0, 0xffffffff), 0);
  if (n.localPref !== undefined) out.localPref = m.take(() => int(n.localPref, at(path, 'localPref'), 0, 0xffffffff), 0);
  if (n.communities !== undefined) {
    const where = at(path, 'communities');
    for (const [i, c] of m.take(() => list(n.communities, where), []).entries()) m.check(() => community(c, `${where}[${i}]`));
    out.communities = n.communities as string[];
  }
  if (n.largeCommunities !== undefined) {
    const where = at(path, 'largeCommunities');
    for (const [i, c] of m.take(() => list(n.largeCommunities, where), []).entries()) m.check(() => largeCommunity(c, `${where}[${i}]`));
    out.largeCommunities = n.largeCommunities as string[];
  }
  return out;
}

/** A network to originate: its prefix and the attributes it carries, every mistake named at once. */
export function network(n: unknown, path: string): NetworkConfig {
  if (!isObj(n)) throw new ConfigError(`${at(path, 'prefix')}: a prefix like 10.0.0.0/24`);
  const m = new Mistakes();
  const p = m.take(() => prefix(n.prefix, at(path, 'prefix')), '');
  m.check(() => onlyKeys(n, NETWORK_KEYS, path));
  const out = { prefix: p, ...attributes(n, path, m) };
  m.throwIfAny();
  return out;
}

/** The networks of a control call: one `prefix`, or many (`prefixes`) that carry the same attributes. */
export function networks(n: Obj, path: string): { prefixes: string[]; attributes: NetworkAttributes } {
  if (n.prefixes === undefined) {
    const { prefix: one, ...shared } = network(n, path);
    return { prefixes: [one], attributes: shared };
  }
  const m = new Mistakes();
  m.check(() => onlyKeys(n, SHARED_KEYS, path));
  const where = at(path, 'prefixes');
  const prefixes = m.take(() => list(n.prefixes, where), []).map((p, i) => m.take(() => prefix(p, `${where}[${i}]`), ''));
  const shared = attributes(n, path, m);
  m.throwIfAny();
  return { prefixes, attributes: shared };
}

/** A checked network's attributes as the speaker originates them. */
export function networkAttributes(n: NetworkAttributes): PathAttributes {
  const a: PathAttributes = {};
  if (n.med !== undefined) a.med = n.med;
  if (n.localPref !== undefined) a.localPref = n.localPref;
  if (n.communities?.length) a.communities = n.communities.map((c) => community(c, 'communities'));
  if (n.largeCommunities?.length) a.largeCommunities = n.largeCommunities.map((c) => largeCommunity(c, 'largeCommunities'));
  return a;
}
