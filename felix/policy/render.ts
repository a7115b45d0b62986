// An NftTable as the text `nft -f` reads: the whole table in one script, which nft applies as
// one transaction (all of it or none). The pieces (a rule with its comment, a set's body, a
// base chain's header) are exported so that a dataplane writing incremental commands prints
// them exactly as a full load does.
import { mapDeclaration } from './map-typeof.js';
import type { NftBaseChain, NftChain, NftMap, NftRule, NftSet, NftTable } from './nft-model.js';
import { declaredSetFlags } from './set-flags.js';

export interface RenderOptions {
  /**
   * Delete the table first, in the same transaction, so the script replaces whatever the kernel
   * holds under that name (a resync from scratch). Conntrack entries outlive the table, so
   * established connections keep flowing through the replacement.
   */
  readonly replace?: boolean;
  /**
   * The comment written on a rule: by default its id (none when it has none). A dataplane that
   * keys rules by a comment of its own passes its function, so a full load and its incremental
   * transactions write the same comments.
   */
  readonly comment?: RuleComment;
}

export type RuleComment = (rule: NftRule) => string | undefined;

const idComment: RuleComment = (rule) => rule.id;

/** The kernel keeps a rule's comment in 128 bytes of user data, NUL included. */
export const MAX_COMMENT_BYTES = 127;

/** `family name`, as every nft command names the table. */
export function tableRef(table: Pick<NftTable, 'family' | 'name'>): string {
  return `${table.family} ${table.name}`;
}

/** A quoted nft string. nft has no escape inside quotes, so a quote or a line break cannot be said. */
export function quote(text: string, what: string): string {
  if (/["\n\r\\]/.test(text)) throw new Error(`nft ${what} ${JSON.stringify(text)}: quotes, backslashes and line breaks cannot be written`);
  return `"${text}"`;
}

/** The rule as nft reads it: its statements, then its comment (by default its id). */
export function ruleText(rule: NftRule, comment: RuleComment = idComment): string {
  const text = comment(rule);
  if (text === undefined) return rule.expr;
  if (Buffer.byteLength(text) > MAX_COMMENT_BYTES)
    throw new Error(`nft rule comment ${JSON.stringify(text)}: longer than ${MAX_COMMENT_BYTES} bytes`);
  return `${rule.expr} comment ${quote(text, 'rule comment')}`;
}

/** `type filter hook forward priority 0; policy accept;` */
export function baseChainHeader(base: NftBaseChain): string {
  return `type ${base.type} hook ${base.hook} priority ${base.priority}; policy ${base.policy};`;
}

const ELEMENTS_PER_LINE = 8;

/** `{ a, b, … }`, broken into lines so that a large set stays readable. */
export function elementList(elements: readonly string[], indent = ''): string {
  if (elements.length <= ELEMENTS_PER_LINE) return `{ ${elements.join(', ')} }`;
  const lines: string[] = [];
  for (let i = 0; i < elements.length; i += ELEMENTS_PER_LINE) lines.push(elements.slice(i, i + ELEMENTS_PER_LINE).join(', '));
  return `{\n${indent}\t${lines.join(`,\n${indent}\t`)}\n${indent}}`;
}

/** The declarations inside `set NAME { … }`, one per line, without the braces. */
export function setBody(set: NftSet): string[] {
  const lines = [`type ${set.type}`];
  const flags = declaredSetFlags(set);
  if (flags) lines.push(`flags ${flags}`);
  if (set.timeout !== undefined) lines.push(`timeout ${set.timeout}s`);
  if (set.elements.length > 0 && set.timeout === undefined) lines.push(`elements = ${elementList(set.elements, '\t\t')}`);
  return lines;
}

function renderSet(set: NftSet): string {
  return `\tset ${set.name} {\n${setBody(set)
    .map((l) => `\t\t${l}\n`)
    .join('')}\t}\n`;
}

/** The declarations inside `map NAME { … }`, one per line, without the braces. */
export function mapBody(map: NftMap): string[] {
  const lines = [mapDeclaration(map.type, map.data, map.typeof)];
  if (map.elements.length > 0) {
    lines.push(
      `elements = ${elementList(
        map.elements.map((e) => `${e.key} : ${e.verdict}`),
        '\t\t',
      )}`,
    );
  }
  return lines;
}

function renderMap(map: NftMap): string {
  return `\tmap ${map.name} {\n${mapBody(map)
    .map((l) => `\t\t${l}\n`)
    .join('')}\t}\n`;
}

function renderChain(chain: NftChain, comment: RuleComment): string {
  const lines: string[] = [];
  if (chain.base) lines.push(baseChainHeader(chain.base));
  for (const rule of chain.rules) lines.push(ruleText(rule, comment));
  return `\tchain ${chain.name} {\n${lines.map((l) => `\t\t${l}\n`).join('')}\t}\n`;
}

/**
 * The whole table as one `nft -f` script. Sets and maps come first; chains may jump to chains
 * declared after them, and map elements to chains declared below: nft resolves the block as
 * a whole.
 */
export function renderNftScript(table: NftTable, options: RenderOptions = {}): string {
  const ref = tableRef(table);
  let out = '';
  if (options.replace) out += `table ${ref}\ndelete table ${ref}\n`;
  out += `table ${ref} {\n`;
  out += table.sets.map(renderSet).join('');
  out += (table.maps ?? []).map(renderMap).join('');
  out += table.chains.map((c) => renderChain(c, options.comment ?? idComment)).join('');
  out += '}\n';
  return out;
}
