// The fields a speaker daemon is given, checked one by one so that a mistake names its path
// (`peers[2].asn: ...`). The configuration files (bgpd's and the reflector's) and the bodies
// of the control socket's calls go through these same checks, so a peer or a network is
// refused in the same words wherever it comes from.
import { isIP } from 'node:net';
import type { AddressFamily } from '../../bgp/index.js';
import { AddressError, checkedRouterId, parseCidr } from '../../ip/index.js';
import { closestName } from '../resources/index.js';
import { maxPrefixes } from './max-prefixes.js';
import { password } from './password.js';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  /** Each mistake with its path: one, or every one a whole document was found to hold. */
  readonly mistakes: readonly string[];
  constructor(mistakes: string | readonly string[]) {
    const all = typeof mistakes === 'string' ? [mistakes] : mistakes;
    super(all.length === 1 ? all[0] : `${all.length} mistakes:\n${all.map((m) => `  ${m}`).join('\n')}`);
    this.mistakes = all;
  }
}

/**
 * The mistakes of one document, gathered so that a file with three is refused once, naming all
 * three, rather than three times in turn. Each check runs on its own; a check that needs another
 * field's value runs only when that value was taken.
 */
export class Mistakes {
  private readonly found: string[] = [];

  /** What `read` returns, or `instead` with its mistakes noted when it refuses the field. */
  take<T>(read: () => T, instead: T): T {
    try {
      return read();
    } catch (e) {
      if (e instanceof ConfigError) this.found.push(...e.mistakes);
      else if (e instanceof AddressError) this.found.push(e.message);
      else throw e;
      return instead;
    }
  }

  /** A mistake found without a check that throws. */
  note(mistake: string): void {
    this.found.push(mistake);
  }

  /** Runs a check whose only answer is whether it throws. */
  check(run: () => void): void {
    this.take(run, undefined);
  }

  get count(): number {
    return this.found.length;
  }

  /** One ConfigError naming every mistake noted, if there was any. */
  throwIfAny(): void {
    if (this.found.length > 0) throw new ConfigError(this.found);
  }
}

export type Obj = Record<string, unknown>;

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The path of a field inside `path` (the top level of a control call's body has none). */
export function at(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/** A whole number in min..max: what an attribute's 32-bit field (MED, LOCAL_PREF) holds. */
export function int(v: unknown, path: string, min: number, max: number): number {
  num(v, path, min, max);
  if (!Number.isInteger(v)) throw new ConfigError(`${path}: ${JSON.stringify(v)} is not a whole number`);
  return v as number;
}

/** A number in min..max, written as one: a quoted "179" is refused as the string it is. */
export function num(v: unknown, path: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max)
    throw new ConfigError(`${path}: ${JSON.stringify(v)} is ${quotedNumber(v) ? 'a string, ' : ''}not a number in ${min}..${max}`);
  return v;
}

/** A number in quotes ("179", "0.5"): YAML reads it as a string, and it is refused as one, by name. */
export function quotedNumber(v: unknown): boolean {
  return typeof v === 'string' && /^\s*[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?\s*$/i.test(v);
}

/**
 * An address a socket connects to or listens on (a peer's, our own): node:net reads it, as the
 * socket will, so a link-local peer keeps its zone (fe80::1%eth0).
 */
export function ip(v: unknown, path: string): string {
  if (typeof v !== 'string' || isIP(v) === 0) throw new ConfigError(`${path}: ${JSON.stringify(v)} is not an IP address`);
  return v;
}

/** A router ID, or a cluster ID (RFC 4456), which is written the same way: ip/'s rule and words. */
export function identifier(v: unknown, path: string): string {
  try {
    return checkedRouterId(v, path);
  } catch (e) {
    if (e instanceof AddressError) throw new ConfigError(e.message);
    throw e;
  }
}

function bool(v: unknown, path: string): void {
  if (v !== undefined && typeof v !== 'boolean') throw new ConfigError(`${path}: ${JSON.stringify(v)} is not true or false`);
}

export function list(v: unknown, path: string): unknown[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new ConfigError(`${path}: a list`);
  return v;
}

/** A prefix as the RIB takes it: an address, a slash and a length that fits the family. */
export function prefix(v: unknown, path: string): string {
  if (typeof v !== 'string' || !reads(() => parseCidr(v, path, false))) throw new ConfigError(`${path}: a prefix like 10.0.0.0/24`);
  return v;
}

/** Whether ip/ reads the text (`read` throws AddressError when it does not). */
function reads(read: () => unknown): boolean {
  try {
    read();
    return true;
  } catch (e) {
    if (e instanceof AddressError) return false;
    throw e;
  }
}

/** A family by its name, or its short name as FRR writes it (ipv4, ipv6). */
export function family(v: unknown, path: string): AddressFamily {
  if (v === 'ipv4' || v === 'ipv4-unicast') return 'ipv4-unicast';
  if (v === 'ipv6' || v === 'ipv6-unicast') return 'ipv6-unicast';
  throw new ConfigError(`${path}: unknown family ${JSON.stringify(v)} (ipv4-unicast or ipv6-unicast)`);
}

export function families(v: unknown, path: string): AddressFamily[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) throw new ConfigError(`${path}: a list of families (ipv4-unicast, ipv6-unicast)`);
  return v.map((f, i) => family(f, `${path}[${i}]`));
}

/**
 * Refuses every field of `o` that `keys` does not name, each with the known name it most likely
 * stands for (one not written already: `prefix` beside `prefixes` is not a misspelling of it).
 */
export function onlyKeys(o: Obj, keys: ReadonlySet<string>, path: string): void {
  const unknown = Object.keys(o).filter((k) => !keys.has(k));
  if (unknown.length === 0) return;
  const free = [...keys].filter((k) => !(k in o));
  throw new ConfigError(
    unknown.map((k) => {
      const near = closestName(k, free);
      return `${at(path, k)}: unknown field${near === undefined ? '' : `; did you mean ${near}?`}`;
    }),
  );
}

const PEER_KEYS = new Set([
  'address',
  'asn',
  'localAs',
  'port',
  'localAddress',
  'localAddressV6',
  'passive',
  'holdTime',
  'keepaliveTime',
  'connectRetryTime',
  'idleHoldTime',
  'families',
  'addPath',
  'extendedMessage',
  'gracefulRestart',
  'longLivedGracefulRestart',
  'description',
  'nextHopSelf',
  'routeReflectorClient',
  'password',
  'maxPrefixes',
  'ttlSecurity',
  'ttl',
  'bfd',
]);
const DYNAMIC_KEYS = new Set([...PEER_KEYS, 'range']);
const ADD_PATH_MODES = new Set(['receive', 'send', 'both']);

/**
 * A peer (`dynamic`: a range of peers, with `range` in place of `address` and one AS or a list).
 * Returns the peer with its families spelled out; the caller knows which kind of peer it asked for.
 * Every mistake in the peer is reported at once.
 */
export function peer(p: unknown, path: string, dynamic: boolean): Obj {
  if (!isObj(p)) throw new ConfigError(`${path}: a peer is a mapping`);
  const m = new Mistakes();
  const field = (k: string) => at(path, k);
  m.check(() => onlyKeys(p, dynamic ? DYNAMIC_KEYS : PEER_KEYS, path));
  const out: Obj = { ...p };
  if (dynamic) m.check(() => prefix(p.range, field('range')));
  else m.check(() => ip(p.address, field('address')));
  if (dynamic && Array.isArray(p.asn)) for (const [i, a] of p.asn.entries()) m.check(() => num(a, `${field('asn')}[${i}]`, 1, 0xffffffff));
  else m.check(() => num(p.asn, field('asn'), 1, 0xffffffff));
  if (p.localAs !== undefined) m.check(() => wholeNumber(p.localAs, field('localAs'), 1, 0xffffffff));
  if (p.port !== undefined) m.check(() => num(p.port, field('port'), 1, 65535));
  if (p.localAddress !== undefined) m.check(() => ip(p.localAddress, field('localAddress')));
  if (p.localAddressV6 !== undefined) m.check(() => ip(p.localAddressV6, field('localAddressV6')));
  const timesBefore = m.count;
  if (p.holdTime !== undefined) m.check(() => holdTime(p.holdTime, field('holdTime')));
  for (const k of ['keepaliveTime', 'connectRetryTime', 'idleHoldTime'])
    if (p[k] !== undefined) m.check(() => num(p[k], field(k), 0.1, 65535));
  // Compared only once both times were taken.
  if (m.count === timesBefore) m.check(() => keepaliveWithinHold(p, path));
  out.families = m.take(() => families(p.families, field('families')), undefined);
  for (const k of ['passive', 'extendedMessage', 'nextHopSelf', 'routeReflectorClient']) m.check(() => bool(p[k], field(k)));
  if (p.description !== undefined && typeof p.description !== 'string')
    m.note(`${field('description')}: ${JSON.stringify(p.description)} is not a string`);
  if (p.addPath !== undefined) out.addPath = m.take(() => addPath(p.addPath, field('addPath')), undefined);
  m.check(() => gracefulRestart(p.gracefulRestart, field('gracefulRestart')));
  m.check(() => longLivedGracefulRestart(p, field('longLivedGracefulRestart')));
  if (p.maxPrefixes !== undefined) out.maxPrefixes = m.take(() => maxPrefixes(p.maxPrefixes, field('maxPrefixes')), undefined);
  if (p.password !== undefined) out.password = m.take(() => password(p.password, field('password')), undefined);
  // GTSM (the peer at most this many hops away) or a plain TTL out; not both: GTSM sends 255.
  if (p.ttlSecurity !== undefined) m.check(() => wholeNumber(p.ttlSecurity, field('ttlSecurity'), 1, 254));
  if (p.ttl !== undefined) m.check(() => wholeNumber(p.ttl, field('ttl'), 1, 255));
  if (p.ttl !== undefined && p.ttlSecurity !== undefined)
    m.note(`${field('ttl')}: set ttl or ttlSecurity, not both (GTSM always sends TTL 255)`);
  if (p.bfd !== undefined) out.bfd = m.take(() => bfd(p.bfd, field('bfd')), undefined);
  m.throwIfAny();
  return out;
}

function wholeNumber(v: unknown, path: string, min: number, max: number): void {
  if (!Number.isInteger(num(v, path, min, max))) throw new ConfigError(`${path}: ${JSON.stringify(v)} is not a whole number`);
}

const BFD_KEYS = new Set(['enabled', 'minTxInterval', 'minRxInterval', 'multiplier']);

/**
 * BFD to the peer: true (300 ms × 3), false, or `{ enabled, minTxInterval, minRxInterval,
 * multiplier }` in milliseconds, as the speaker's `bfd` takes them.
 */
function bfd(v: unknown, path: string): boolean | Obj {
  if (typeof v === 'boolean') return v;
  if (!isObj(v)) throw new ConfigError(`${path}: true, false or { enabled, minTxInterval, minRxInterval, multiplier }`);
  onlyKeys(v, BFD_KEYS, path);
  bool(v.enabled, `${path}.enabled`);
  if (v.enabled === false) return false;
  const timers: Obj = {};
  const whole = (k: string, max: number) => {
    const n = num(v[k], `${path}.${k}`, 1, max);
    if (!Number.isInteger(n)) throw new ConfigError(`${path}.${k}: ${n} is not a whole number`);
    timers[k] = n;
  };
  for (const k of ['minTxInterval', 'minRxInterval']) if (v[k] !== undefined) whole(k, 60_000);
  if (v.multiplier !== undefined) whole('multiplier', 255);
  return timers;
}

/** 0 (no keepalives, no hold timer) or 3..65535 seconds (RFC 4271 §4.2). */
function holdTime(v: unknown, path: string): void {
  const h = num(v, path, 0, 65535);
  if (h === 1 || h === 2) throw new ConfigError(`${path}: ${h} (0, or 3..65535 seconds)`);
}

/** The hold time a peer offers when its configuration names none (bgp/session's default). */
const DEFAULT_HOLD_TIME = 90;

/**
 * A keepalive interval longer than the hold time would let the session expire between two
 * keepalives if it were used as written; BIRD refuses it the same way. The speaker then sends
 * keepalives every min(keepaliveTime, a third of the negotiated hold time), as FRR does. A hold
 * time of 0 sends none, so any interval goes with it.
 */
function keepaliveWithinHold(p: Obj, path: string): void {
  const hold = p.holdTime === undefined ? DEFAULT_HOLD_TIME : (p.holdTime as number);
  if (p.keepaliveTime !== undefined && hold !== 0 && (p.keepaliveTime as number) > hold)
    throw new ConfigError(
      `${at(path, 'keepaliveTime')}: ${p.keepaliveTime} is more than the hold time (${hold}${p.holdTime === undefined ? ', the default' : ''}); at most the hold time`,
    );
}

/** ADD-PATH per family: the family's names as in `families`, spelled out. */
function addPath(v: unknown, path: string): Obj {
  if (!isObj(v)) throw new ConfigError(`${path}: a mapping of family to receive, send or both`);
  const modes: Obj = {};
  for (const [f, mode] of Object.entries(v)) {
    const name = family(f, `${path}.${f}`);
    if (typeof mode !== 'string' || !ADD_PATH_MODES.has(mode))
      throw new ConfigError(`${path}.${f}: ${JSON.stringify(mode)} (receive, send or both)`);
    modes[name] = mode;
  }
  return modes;
}

/**
 * Long-lived graceful restart (RFC 9494): on or off, or on with a stale time (the capability's
 * 24 bits). It runs beside graceful restart, so not on a peer that turns that off.
 */
function longLivedGracefulRestart(p: Obj, path: string): void {
  const v = p.longLivedGracefulRestart;
  if (isObj(v)) {
    onlyKeys(v, new Set(['staleTime']), path);
    if (v.staleTime !== undefined) num(v.staleTime, `${path}.staleTime`, 0, 0xffffff);
  } else if (v !== undefined && typeof v !== 'boolean') {
    throw new ConfigError(`${path}: true, false or { staleTime }`);
  }
  if (v !== undefined && v !== false && p.gracefulRestart === false)
    throw new ConfigError(`${path}: needs graceful restart, which this peer turns off (gracefulRestart: false)`);
}

/** On or off, or on with a restart time (one that fits the capability's 12 bits, RFC 4724). */
function gracefulRestart(v: unknown, path: string): void {
  if (isObj(v)) {
    onlyKeys(v, new Set(['restartTime']), path);
    if (v.restartTime !== undefined) num(v.restartTime, `${path}.restartTime`, 0, 4095);
  } else if (v !== undefined && typeof v !== 'boolean') {
    throw new ConfigError(`${path}: true, false or { restartTime }`);
  }
}
