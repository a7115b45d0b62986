// A desired NftTable in the keyed form the kernel's table is read back into, so the two compare:
// rules by the comment we write on them (the rule's id and a hash of its statements, since nft
// prints a rule back in its own words), sets by type, flags and canonical elements. Also the
// checks that keep a desired table from saying more than it means once written into an
// `nft -f` script: no line breaks, no `;` or `#` outside quotes, names nft reads as names.

import { createHash } from 'node:crypto';
import type { InstalledChain, InstalledRule, InstalledSet, InstalledTable } from './dataplane.js';
import { canonicalElements, canonicalType } from './element-text.js';
import type { NftChain, NftRule, NftSet, NftTable } from './nft-model.js';

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
  let quoted = false;
  for (const c of text) {
    if (c === '\n' || c === '\r') throw new NftTableError(field, `${JSON.stringify(text)} has a line break`);
    if (c === '"') quoted = !quoted;
    else if (!quoted && (c === ';' || c === '#' || extra.includes(c)))
      throw new NftTableError(field, `${JSON.stringify(text)} has ${JSON.stringify(c)} outside quotes`);
  }
  if (quoted) throw new NftTableError(field, `${JSON.stringify(text)} has an unclosed quote`);
}

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
  const statements = rule.expr.trim().replace(/\s+/g, ' ');
  const hash = createHash('sha256').update(`${id}\n${statements}`).digest('hex').slice(0, HASH_CHARS);
  let shown = commentSafe(id);
  const room = MAX_COMMENT_BYTES - HASH_CHARS - 1;
  if (shown.length > room) shown = `${shown.slice(0, room - 1)}~`;
  return `${shown}|${hash}`;
}

/** The id part of a comment we wrote (exact unless the id was cut or had unprintable characters). */
export function ruleIdOfComment(comment: string): string | undefined {
  const bar = comment.lastIndexOf('|');
  return bar < 0 ? undefined : comment.slice(0, bar);
}

/** Named sets (`@name`) and chains (`jump`/`goto name`) a rule's text refers to. */
export function ruleRefs(expr: string): { sets: string[]; chains: string[] } {
  // Quoted text (a log prefix) refers to nothing; `@th,16,16` is a raw payload, not a set.
  const bare = expr.replace(/"[^"]*"/g, '""');
  const sets = [...bare.matchAll(/@([A-Za-z_][A-Za-z0-9_.-]*)(?![A-Za-z0-9_.,-])/g)].map((m) => m[1]);
  const chains = [...bare.matchAll(/\b(?:jump|goto)\s+([A-Za-z_][A-Za-z0-9_.-]*)/g)].map((m) => m[1]);
  return { sets: [...new Set(sets)], chains: [...new Set(chains)] };
}

// Desired tables are rebuilt on every change, but a compiler that keeps unchanged sets and
// chains as the same objects lets each be keyed once: a pod add then costs one set's diff.
const setCache = new WeakMap<NftSet, InstalledSet>();
const chainCache = new WeakMap<NftChain, InstalledChain>();

function setState(set: NftSet, field: string): InstalledSet {
  const hit = setCache.get(set);
  if (hit) return hit;
  checkName(set.name, `${field}.name`);
  const type = canonicalType(typeof set.type === 'string' ? set.type : '');
  if (!/^[a-z0-9_]+( \. [a-z0-9_]+)*$/.test(type))
    throw new NftTableError(`${field}.type`, `${JSON.stringify(set.type)} is not an nft type`);
  for (let i = 0; i < set.elements.length; i++) checkText(set.elements[i], `${field}.elements[${i}]`, ',{}');
  const state: InstalledSet = {
    name: set.name,
    type,
    flags: set.interval ? ['interval'] : [],
    elements: new Set(canonicalElements(type, set.interval, set.elements)),
  };
  setCache.set(set, state);
  return state;
}

function ruleState(rule: NftRule, field: string): InstalledRule {
  checkText(rule.expr, `${field}.expr`);
  return { comment: ruleComment(rule), ...ruleRefs(rule.expr) };
}

function chainState(chain: NftChain, field: string): InstalledChain {
  const hit = chainCache.get(chain);
  if (hit) return hit;
  checkName(chain.name, `${field}.name`);
  if (chain.base) {
    const b = chain.base;
    if (!Number.isInteger(b.priority)) throw new NftTableError(`${field}.base.priority`, `${b.priority} is not an integer`);
    for (const k of ['type', 'hook', 'policy'] as const) checkName(b[k], `${field}.base.${k}`);
  }
  const state: InstalledChain = {
    name: chain.name,
    base: chain.base && { type: chain.base.type, hook: chain.base.hook, priority: chain.base.priority, policy: chain.base.policy },
    rules: chain.rules.map((r, i) => ruleState(r, `${field}.rules[${i}]`)),
  };
  chainCache.set(chain, state);
  return state;
}

/** The keyed form of a desired table; throws NftTableError naming the field of anything nft could not be given. */
export function tableState(table: NftTable): InstalledTable {
  if (table.family !== 'inet') throw new NftTableError('family', `${JSON.stringify(table.family)}: only inet tables are managed`);
  checkName(table.name, 'name');
  const sets = new Map<string, InstalledSet>();
  table.sets.forEach((s, i) => {
    const state = setState(s, `sets[${i}]`);
    if (sets.has(s.name)) throw new NftTableError(`sets[${i}].name`, `${s.name} is declared twice`);
    sets.set(s.name, state);
  });
  const chains = new Map<string, InstalledChain>();
  table.chains.forEach((c, i) => {
    const state = chainState(c, `chains[${i}]`);
    if (chains.has(c.name)) throw new NftTableError(`chains[${i}].name`, `${c.name} is declared twice`);
    chains.set(c.name, state);
  });
  return { sets, chains };
}

/** comment → rule id, for every rule of the table that has an id. */
export function commentIds(table: NftTable): Map<string, string> {
  const out = new Map<string, string>();
  table.chains.forEach((c, i) => {
    const rules = chainState(c, `chains[${i}]`).rules;
    c.rules.forEach((r, j) => {
      if (r.id !== undefined) out.set(rules[j].comment, r.id);
    });
  });
  return out;
}
