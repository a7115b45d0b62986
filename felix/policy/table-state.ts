// A desired NftTable in the keyed form the kernel's table is read back into, so the two compare:
// rules by the comment we write on them (the rule's id and a hash of its statements, since nft
// prints a rule back in its own words), sets by type, flags and canonical elements, maps by
// type and canonical key → verdict. Also the
// checks that keep a desired table from saying more than it means once written into an
// `nft -f` script: no line breaks, no `;` or `#` outside quotes, names nft reads as names.

import { hash } from 'node:crypto';
import type { InstalledChain, InstalledMap, InstalledRule, InstalledSet, InstalledTable } from './dataplane.js';
import { canonicalElementSet, canonicalElements, canonicalKey, canonicalType, canonicalVerdict } from './element-text.js';
import { mapTypeof } from './map-typeof.js';
import type { NftChain, NftMap, NftRule, NftSet, NftTable } from './nft-model.js';
import { nftMapChange, nftSetChange } from './derivation.js';
import { DerivedMapElements } from './derived-map-elements.js';
import { DerivedElements } from './derived-elements.js';
import { comparedSetFlags } from './set-flags.js';

/** The kernel keeps 128 bytes of a rule comment, NUL included. */
const MAX_COMMENT_BYTES = 127;
const HASH_CHARS = 12;

/** Bad desired state: the field is named, nothing is applied. */
export class NftTableError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'NftTableError';
  }
}

// What nft's scanner reads as one name (a chain, a set).
const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

export function checkName(name: string, field: string): void {
  if (typeof name !== 'string' || !NAME.test(name) || name.length > 255)
    throw new NftTableError(field, `${JSON.stringify(name)} is not an nft name (a letter or _, then letters, digits, _ . -)`);
}

/**
 * Statement or element text must stay one command on one line: outside double quotes no line
 * break, no `;` (which would start a second command) and no `#` (which would hide the rest).
 */
export function checkText(text: string, field: string, extra = ''): void {
  if (typeof text !== 'string' || text.trim() === '') throw new NftTableError(field, 'is empty');
  // Most text (every element a compiler writes) has none of the characters that matter: one scan finds so.
  if (!matters(extra).test(text)) return;
  let quoted = false;
  for (const c of text) {
    if (c === '\n' || c === '\r') throw new NftTableError(field, `${JSON.stringify(text)} has a line break`);
    if (c === '"') quoted = !quoted;
    else if (!quoted && (c === ';' || c === '#' || extra.includes(c)))
      throw new NftTableError(field, `${JSON.stringify(text)} has ${JSON.stringify(c)} outside quotes`);
  }
  if (quoted) throw new NftTableError(field, `${JSON.stringify(text)} has an unclosed quote`);
}

// The characters that matter, with each `extra` the callers pass (a few literals).
const MATTERS = new Map<string, RegExp>();

function matters(extra: string): RegExp {
  let re = MATTERS.get(extra);
  if (!re) {
    re = new RegExp(`[\\n\\r";#${extra.replace(/[\\\]^-]/g, '\\$&')}]`);
    MATTERS.set(extra, re);
  }
  return re;
}

const TYPE = /^[a-z0-9_]+( \. [a-z0-9_]+)*$/;

/** An nft type as nft writes it (`ipv4_addr . inet_service`); throws naming the field otherwise. */
export function checkType(type: string, field: string): string {
  const canonical = canonicalType(typeof type === 'string' ? type : '');
  if (!TYPE.test(canonical)) throw new NftTableError(field, `${JSON.stringify(type)} is not an nft type`);
  return canonical;
}

const VERDICT = /^(accept|drop|continue|return|(jump|goto) [A-Za-z_][A-Za-z0-9_.-]*)$/;

/**
 * Whether checkText(text, field, extra) passes `text` at once, as it does most text: a loop
 * over many then names the field (a string made per call) only for the few that need it.
 */
export function plainText(text: string, extra = ''): boolean {
  return typeof text === 'string' && !matters(extra).test(text) && text.trim() !== '';
}

/** Whether checkVerdict passes `verdict` as it is, single-spaced (as a compiler writes it): see plainText. */
export function plainVerdict(verdict: string): boolean {
  return typeof verdict === 'string' && VERDICT.test(verdict);
}

/** A map element's verdict: accept, drop, continue, return, or jump/goto a chain. */
export function checkVerdict(verdict: string, field: string): void {
  if (typeof verdict !== 'string' || !VERDICT.test(canonicalVerdict(verdict)))
    throw new NftTableError(field, `${JSON.stringify(verdict)} is not a verdict (accept, drop, continue, return, jump or goto a chain)`);
}

/** Whitespace other than one space between words. */
const SPACING = /[^\S ]|\s\s/;

function commentSafe(text: string): string {
  return text.replace(/[^\x20-\x7e]|["\\]/g, '_');
}

/**
 * `<id>|<hash>`: the id, so counters and `nft list` name the policy rule, and a hash of the id
 * and the statements, so a changed rule is a different rule. An id too long to fit is cut
 * (ending `~`); the hash covers the whole of it, so two such ids stay apart.
 */
export function ruleComment(rule: NftRule): string {
  const id = rule.id ?? '';
  const trimmed = rule.expr.trim();
  // Single-spaced already, as a compiler writes it: not copied.
  const statements = SPACING.test(trimmed) ? trimmed.replace(/\s+/g, ' ') : trimmed;
  // One call, no Hash object: a whole table's rules are each hashed once.
  const digest = hash('sha256', `${id}\n${statements}`, 'hex').slice(0, HASH_CHARS);
  let shown = commentSafe(id);
  const room = MAX_COMMENT_BYTES - HASH_CHARS - 1;
  if (shown.length > room) shown = `${shown.slice(0, room - 1)}~`;
  return `${shown}|${digest}`;
}

/** The id part of a comment we wrote (exact unless the id was cut or had unprintable characters). */
export function ruleIdOfComment(comment: string): string | undefined {
  const bar = comment.lastIndexOf('|');
  return bar < 0 ? undefined : comment.slice(0, bar);
}

/** Named sets (`@name`) and chains (`jump`/`goto name`) a rule's text refers to. */
export function ruleRefs(expr: string): { sets: string[]; chains: string[] } {
  // Each rule a transaction adds is read here (the plan, the table copy): a text with no `@` names
  // no set and one without `jump` or `goto` no chain, so most rules are told without a regex.
  const named = expr.includes('@');
  const verdict = expr.includes('jump') || expr.includes('goto');
  if (!named && !verdict) return { sets: [], chains: [] };
  // Quoted text (a log prefix) refers to nothing; `@th,16,16` is a raw payload, not a set.
  const bare = expr.includes('"') ? expr.replace(/"[^"]*"/g, '""') : expr;
  return {
    sets: named ? firstOfEach(bare.matchAll(/@([A-Za-z_][A-Za-z0-9_.-]*)(?![A-Za-z0-9_.,-])/g)) : [],
    chains: verdict ? firstOfEach(bare.matchAll(/\b(?:jump|goto)\s+([A-Za-z_][A-Za-z0-9_.-]*)/g)) : [],
  };
}

/** Each match's name, once, in the order first found. */
function firstOfEach(matches: IterableIterator<RegExpMatchArray>): string[] {
  const out: string[] = [];
  for (const m of matches) if (!out.includes(m[1]!)) out.push(m[1]!);
  return out;
}

// A desired table is recompiled on every change, mostly equal to the last one: its sets,
// chains and rules are keyed by content (and by object, for a compiler that keeps unchanged
// parts as they were), so a pod add costs the diff of the one set that changed, and an
// unchanged set or chain is the very object it was, which the plan skips at once. The content
// caches are trimmed to the last table whenever they outgrow it twice over (plus a small
// allowance, so a tiny table is not trimmed on every change). Their stale entries are past
// versions of parts that changed, and a past version is as big as the part (a dispatch map
// holds every local pod): an allowance in the thousands kept that many versions of the pod maps
// under pod churn, memory that grew for as long as it took to fill.
interface Keyed<T> {
  readonly key: string;
  readonly state: T;
}
interface KeyedChain extends Keyed<InstalledChain> {
  readonly ruleKeys: readonly string[];
}
const setsByObject = new WeakMap<NftSet, Keyed<InstalledSet>>();
const mapsByObject = new WeakMap<NftMap, Keyed<InstalledMap>>();
const chainsByObject = new WeakMap<NftChain, KeyedChain>();
let setsByKey = new Map<string, InstalledSet>();
let mapsByKey = new Map<string, InstalledMap>();
let chainsByKey = new Map<string, InstalledChain>();
let rulesByKey = new Map<string, InstalledRule>();
const TRIM_ALLOWANCE = 32;

/**
 * A part met again as the same object keeps the state it had, and the content cache is told so:
 * a trim may have dropped that state, and another object of equal content made a second one
 * meanwhile; left so, equal parts would stop being the same objects.
 */
function known<T, K extends Keyed<T>>(byKey: Map<string, T>, hit: K): K {
  if (byKey.get(hit.key) !== hit.state) byKey.set(hit.key, hit.state);
  return hit;
}

// `remember` false: a state made for a table's change alone is not put in the content caches,
// which only a whole table trims (they would grow with every change between two whole tables).
function setState(set: NftSet, field: string, remember = true): Keyed<InstalledSet> {
  const hit = setsByObject.get(set);
  if (hit) return remember ? known(setsByKey, hit) : hit;
  const derived = derivedSetState(set, field);
  if (derived) return derived;
  const key = `${set.name}\0${set.type}\0${set.interval}\0${set.timeout ?? ''}\0${set.elements.join('\n')}`;
  let state = setsByKey.get(key);
  if (!state) {
    checkName(set.name, `${field}.name`);
    const type = checkType(set.type, `${field}.type`);
    for (let i = 0; i < set.elements.length; i++)
      if (!plainText(set.elements[i], ',{}')) checkText(set.elements[i], `${field}.elements[${i}]`, ',{}');
    const timeout = set.timeout;
    if (timeout !== undefined && (!Number.isInteger(timeout) || timeout < 1))
      throw new NftTableError(`${field}.timeout`, `${timeout} is not a whole number of seconds`);
    const flags = comparedSetFlags(set);
    state = {
      name: set.name,
      type,
      flags,
      elements: timeout !== undefined ? new Set() : canonicalElementSet(type, set.interval, set.elements),
      ...(timeout !== undefined ? { timeout } : {}),
    };
    if (remember) setsByKey.set(key, state);
  }
  const keyed = { key, state };
  setsByObject.set(set, keyed);
  return keyed;
}

let derivedSerial = 0;

/**
 * A set recorded as another's with a few elements added and removed (derivation.ts), when that
 * one's state is known: the same state with the difference, its elements read whole only if
 * someone reads them (DerivedElements). Its key is its own: equal content elsewhere is not
 * looked for, since the plan compares it with the state it came from by the difference.
 */
function derivedSetState(set: NftSet, field: string): Keyed<InstalledSet> | undefined {
  const change = nftSetChange(set);
  const from = change && setsByObject.get(change.from);
  if (!change || !from) return undefined;
  const was = from.state;
  if (set.interval || set.timeout !== undefined || was.timeout !== undefined || set.name !== was.name) return undefined;
  if (was.flags.length || checkType(set.type, `${field}.type`) !== was.type) return undefined;
  // An element nft could not be given: the whole reading refuses it, naming its place.
  try {
    for (const e of change.added) checkText(e, field, ',{}');
  } catch {
    return undefined;
  }
  const added = canonicalElements(was.type, false, change.added);
  const removed = canonicalElements(was.type, false, change.removed);
  // The change's elements in canonical text must still be one each, new and old as said; else read it whole.
  if (added.length !== change.added.length || removed.length !== change.removed.length) return undefined;
  const state: InstalledSet = { ...was, elements: new DerivedElements(was.elements, added, removed) };
  const keyed = { key: `\0derived\0${derivedSerial++}`, state };
  setsByObject.set(set, keyed);
  return keyed;
}

/**
 * A map recorded as another's with a few elements taken out and put in (derivation.ts), when that
 * one's state is known: the same state with the difference (DerivedMapElements), the elements
 * checked and made canonical one by one as a whole map's are.
 */
function derivedMapState(map: NftMap, field: string): Keyed<InstalledMap> | undefined {
  const change = nftMapChange(map);
  const from = change && mapsByObject.get(change.from);
  if (!change || !from) return undefined;
  const was = change.from;
  if (map.name !== was.name || map.type !== was.type || map.data !== was.data || map.typeof !== was.typeof) return undefined;
  const state = from.state;
  const value = (v: string, i: number, what: string): string => {
    if (state.data === 'verdict') {
      checkVerdict(v, `${field}.${what}[${i}].verdict`);
      return canonicalVerdict(v);
    }
    checkText(v, `${field}.${what}[${i}].verdict`, ',{}');
    return canonicalKey(state.data, v);
  };
  let added: [string, string][];
  let removed: string[];
  try {
    added = change.added.map((e, i) => {
      checkText(e.key, `${field}.added[${i}].key`, ',{}');
      return [canonicalKey(state.type, e.key), value(e.verdict, i, 'added')];
    });
    removed = change.removed.map((e) => canonicalKey(state.type, e.key));
  } catch {
    return undefined; // the whole map's reading says where
  }
  const keyed = {
    key: `\0derived\0${derivedSerial++}`,
    state: { ...state, elements: new DerivedMapElements(state.elements, added, removed) },
  };
  mapsByObject.set(map, keyed);
  return keyed;
}

// Maps whose elements their compiler wrote in canonical text (markCanonical).
const canonicalMaps = new WeakSet<NftMap>();
let canonicalSerial = 0;

/**
 * Says that `map`'s elements are already in canonical text, each key once, and text nft reads
 * as one element (addresses formatted, protocols by name, numbers, verdicts single-spaced): its
 * state is then its elements as they are, not each checked and rewritten, which for a services
 * table of 100,000 elements was most of the state's cost. A compiler marks only maps it builds
 * from text it made so (test/felix/services holds it to that). Returns `map`.
 */
export function markCanonical<T extends NftMap>(map: T): T {
  canonicalMaps.add(map);
  return map;
}

/** The state of a map its compiler marked canonical: the head checked as any map's, the elements taken as they are. */
function canonicalMapState(map: NftMap, field: string, remember: boolean): Keyed<InstalledMap> {
  const { type, data, declared } = mapHead(map, field);
  const elements = new Map<string, string>();
  const list = map.elements;
  for (let i = 0; i < list.length; i++) {
    const e = list[i]!;
    const had = elements.get(e.key);
    if (had !== undefined && had !== e.verdict)
      throw new NftTableError(`${field}.elements[${i}].key`, `${e.key} is mapped to both ${had} and ${e.verdict}`);
    elements.set(e.key, e.verdict);
  }
  // Its own key: the compiler keeps an unchanged map the same object, which is found by object.
  const key = `\0canonical\0${canonicalSerial++}`;
  const state: InstalledMap = {
    name: map.name,
    type,
    data: data ?? 'verdict',
    flags: [],
    elements,
    ...(declared ? { typeof: declared.text } : {}),
  };
  if (remember) mapsByKey.set(key, state);
  const keyed = { key, state };
  mapsByObject.set(map, keyed);
  return keyed;
}

/** A map's name, type, data and typeof, checked. */
function mapHead(map: NftMap, field: string): { type: string; data?: string; declared: ReturnType<typeof mapTypeof> } {
  checkName(map.name, `${field}.name`);
  const type = checkType(map.type, `${field}.type`);
  const data = map.data === undefined ? undefined : checkType(map.data, `${field}.data`);
  const declared = mapTypeof(map.typeof);
  if (map.typeof !== undefined && (!declared || declared.type !== type || declared.data !== data))
    throw new NftTableError(
      `${field}.typeof`,
      `${JSON.stringify(map.typeof)} is not a declaration of ${type} : ${data ?? 'verdict'} felix writes`,
    );
  if (!declared && type.split(' . ').includes('integer'))
    throw new NftTableError(`${field}.type`, `${type} needs a typeof declaration (nft has no name for integer)`);
  return { type, ...(data !== undefined ? { data } : {}), declared };
}

function mapState(map: NftMap, field: string, remember = true): Keyed<InstalledMap> {
  const hit = mapsByObject.get(map);
  if (hit) return remember ? known(mapsByKey, hit) : hit;
  const derived = derivedMapState(map, field);
  if (derived) return derived;
  if (canonicalMaps.has(map)) return canonicalMapState(map, field, remember);
  const key = `${map.name}\0${map.type}\0${map.data ?? ''}\0${map.typeof ?? ''}\0${map.elements.map((e) => `${e.key}\0${e.verdict}`).join('\n')}`;
  let state = mapsByKey.get(key);
  if (!state) {
    const { type, data, declared } = mapHead(map, field);
    const elements = new Map<string, string>();
    map.elements.forEach((e, i) => {
      checkText(e.key, `${field}.elements[${i}].key`, ',{}');
      if (data === undefined) checkVerdict(e.verdict, `${field}.elements[${i}].verdict`);
      else checkText(e.verdict, `${field}.elements[${i}].verdict`, ',{}');
      const k = canonicalKey(type, e.key);
      const verdict = data === undefined ? canonicalVerdict(e.verdict) : canonicalKey(data, e.verdict);
      const had = elements.get(k);
      if (had !== undefined && had !== verdict)
        throw new NftTableError(`${field}.elements[${i}].key`, `${e.key} is mapped to both ${had} and ${verdict}`);
      elements.set(k, verdict);
    });
    state = { name: map.name, type, data: data ?? 'verdict', flags: [], elements, ...(declared ? { typeof: declared.text } : {}) };
    if (remember) mapsByKey.set(key, state);
  }
  const keyed = { key, state };
  mapsByObject.set(map, keyed);
  return keyed;
}

/** Rule `i` of the chain at `field`. */
function ruleState(rule: NftRule, key: string, field: string, i: number, remember: boolean): InstalledRule {
  let state = rulesByKey.get(key);
  if (!state) {
    if (!plainText(rule.expr)) checkText(rule.expr, `${field}.rules[${i}].expr`);
    state = { comment: ruleComment(rule), ...ruleRefs(rule.expr) };
    if (remember) rulesByKey.set(key, state);
  }
  return state;
}

function chainState(chain: NftChain, field: string, remember = true): KeyedChain {
  const hit = chainsByObject.get(chain);
  if (hit) return remember ? known(chainsByKey, hit) : hit;
  const b = chain.base;
  const ruleKeys = chain.rules.map((r) => `${r.id ?? ''}\0${r.expr}`);
  const key = `${chain.name}\0${b ? `${b.type} ${b.hook} ${b.priority} ${b.policy}` : ''}\0${ruleKeys.join('\n')}`;
  let state = chainsByKey.get(key);
  if (!state) {
    checkName(chain.name, `${field}.name`);
    if (b) {
      if (!Number.isInteger(b.priority)) throw new NftTableError(`${field}.base.priority`, `${b.priority} is not an integer`);
      for (const k of ['type', 'hook', 'policy'] as const) checkName(b[k], `${field}.base.${k}`);
    }
    state = {
      name: chain.name,
      base: b && { type: b.type, hook: b.hook, priority: b.priority, policy: b.policy },
      rules: chain.rules.map((r, i) => ruleState(r, ruleKeys[i]!, field, i, remember)),
    };
    if (remember) chainsByKey.set(key, state);
  }
  const keyed = { key, state, ruleKeys };
  chainsByObject.set(chain, keyed);
  return keyed;
}

function trim(sets: readonly Keyed<InstalledSet>[], maps: readonly Keyed<InstalledMap>[], chains: readonly KeyedChain[]): void {
  let rules = 0;
  for (const c of chains) rules += c.ruleKeys.length;
  if (setsByKey.size > 2 * sets.length + TRIM_ALLOWANCE) setsByKey = new Map(sets.map((s) => [s.key, s.state]));
  if (mapsByKey.size > 2 * maps.length + TRIM_ALLOWANCE) mapsByKey = new Map(maps.map((m) => [m.key, m.state]));
  if (chainsByKey.size > 2 * chains.length + TRIM_ALLOWANCE) chainsByKey = new Map(chains.map((c) => [c.key, c.state]));
  if (rulesByKey.size > 2 * rules + TRIM_ALLOWANCE) {
    rulesByKey = new Map();
    for (const c of chains) for (let i = 0; i < c.ruleKeys.length; i++) rulesByKey.set(c.ruleKeys[i], c.state.rules[i]);
  }
}

/** How many entries the content caches hold (for tests: they stay bounded by the last table). */
export function tableStateCacheSizes(): { sets: number; maps: number; chains: number; rules: number } {
  return { sets: setsByKey.size, maps: mapsByKey.size, chains: chainsByKey.size, rules: rulesByKey.size };
}

/** The keyed form of a desired table; throws NftTableError naming the field of anything nft could not be given. */
export function tableState(table: NftTable): InstalledTable {
  if (table.family !== 'inet') throw new NftTableError('family', `${JSON.stringify(table.family)}: only inet tables are managed`);
  checkName(table.name, 'name');
  const sets = new Map<string, InstalledSet>();
  const keyedSets = table.sets.map((s, i) => {
    const keyed = setState(s, `sets[${i}]`);
    if (sets.has(s.name)) throw new NftTableError(`sets[${i}].name`, `${s.name} is declared twice`);
    sets.set(s.name, keyed.state);
    return keyed;
  });
  const maps = new Map<string, InstalledMap>();
  const keyedMaps = (table.maps ?? []).map((m, i) => {
    const keyed = mapState(m, `maps[${i}]`);
    if (maps.has(m.name)) throw new NftTableError(`maps[${i}].name`, `${m.name} is declared twice`);
    if (sets.has(m.name)) throw new NftTableError(`maps[${i}].name`, `${m.name} is a set's name too (sets and maps share one namespace)`);
    maps.set(m.name, keyed.state);
    return keyed;
  });
  const chains = new Map<string, InstalledChain>();
  const keyedChains = table.chains.map((c, i) => {
    const keyed = chainState(c, `chains[${i}]`);
    if (chains.has(c.name)) throw new NftTableError(`chains[${i}].name`, `${c.name} is declared twice`);
    chains.set(c.name, keyed.state);
    return keyed;
  });
  trim(keyedSets, keyedMaps, keyedChains);
  return { sets, maps, chains };
}

/** One set's keyed form, as tableState gives it; throws NftTableError (naming `field`) as tableState does. */
export function desiredSetState(set: NftSet, field: string): InstalledSet {
  return setState(set, field, false).state;
}

/** One map's keyed form, as tableState gives it; throws NftTableError (naming `field`) as tableState does. */
export function desiredMapState(map: NftMap, field: string): InstalledMap {
  return mapState(map, field, false).state;
}

/** One chain's keyed form, as tableState gives it; throws NftTableError (naming `field`) as tableState does. */
export function desiredChainState(chain: NftChain, field: string): InstalledChain {
  return chainState(chain, field, false).state;
}

/** comment → rule id, for every rule of the table that has an id. */
export function commentIds(table: NftTable): Map<string, string> {
  const out = new Map<string, string>();
  table.chains.forEach((c, i) => {
    const rules = chainState(c, `chains[${i}]`).state.rules;
    c.rules.forEach((r, j) => {
      if (r.id !== undefined) out.set(rules[j].comment, r.id);
    });
  });
  return out;
}
