// A transaction as the text `nft -f` reads: one command per line, every one naming the
// dataplane's own table, so an error nft reports at a line is the operation at that index and
// no line can reach another table. Names and texts are checked again here, so a script never
// carries a second command hidden in a statement.

import type { NftApplyResult, NftOp } from './dataplane.js';
import type { NftMapElement } from './nft-model.js';
import { baseChainHeader, quote, tableRef } from './render.js';
import { mapDeclaration } from './map-typeof.js';
import { declaredSetFlags } from './set-flags.js';
import { checkName, checkText, checkType, checkVerdict, plainText, plainVerdict } from './table-state.js';

function elementList(elements: readonly string[]): string {
  for (let i = 0; i < elements.length; i++) checkText(elements[i], `elements[${i}]`, ',{}');
  return `{ ${elements.join(', ')} }`;
}

function checkKey(key: string, field: string): string {
  checkText(key, field, ',{}');
  return key;
}

function keyList(keys: readonly string[]): string {
  return `{ ${keys.map((k, i) => checkKey(k, `keys[${i}]`)).join(', ')} }`;
}

/** `{ "cali1" : jump to-cali1, … }` */
/** `verdicts`: the map's data are verdicts; false: values; undefined: not known here (text checked alone). */
function mapElementList(elements: readonly NftMapElement[], verdicts: boolean | undefined): string {
  const text = elements.map((e, i) => {
    if (verdicts) checkVerdict(e.verdict, `elements[${i}].verdict`);
    else checkKey(e.verdict, `elements[${i}].verdict`);
    return `${checkKey(e.key, `elements[${i}].key`)} : ${e.verdict}`;
  });
  return `{ ${text.join(', ')} }`;
}

/** One line of nft for one operation on table `family name`. */
export function opLine(table: { readonly family: 'inet'; readonly name: string }, op: NftOp): string {
  const t = tableRef(table);
  switch (op.kind) {
    case 'add table':
      return `add table ${t}`;
    case 'add set': {
      checkName(op.set, 'set');
      if (!/^[a-z0-9_]+( \. [a-z0-9_]+)*$/.test(op.type))
        throw new Error(`nft set ${op.set}: type ${JSON.stringify(op.type)} is not an nft type`);
      const timeout = op.timeout;
      if (timeout !== undefined && (!Number.isInteger(timeout) || timeout < 1)) throw new Error(`nft set ${op.set}: timeout ${timeout}`);
      const declared = declaredSetFlags(op);
      const flags = `${declared ? ` flags ${declared};` : ''}${timeout !== undefined ? ` timeout ${timeout}s;` : ''}`;
      const elements = op.elements.length ? ` elements = ${elementList(op.elements)};` : '';
      return `add set ${t} ${op.set} { type ${op.type};${flags}${elements} }`;
    }
    case 'delete set':
      checkName(op.set, 'set');
      return `delete set ${t} ${op.set}`;
    case 'add element':
    case 'delete element':
      checkName(op.set, 'set');
      return `${op.kind} ${t} ${op.set} ${elementList(op.elements)}`;
    case 'add map': {
      checkName(op.map, 'map');
      const type = checkType(op.type, `map ${op.map} type`);
      const data = op.data === undefined ? undefined : checkType(op.data, `map ${op.map} data`);
      const elements = op.elements.length ? ` elements = ${mapElementList(op.elements, data === undefined)};` : '';
      if (op.typeof !== undefined) checkText(op.typeof, `map ${op.map} typeof`, ',{}');
      return `add map ${t} ${op.map} { ${mapDeclaration(type, data, op.typeof)};${elements} }`;
    }
    case 'delete map':
      checkName(op.map, 'map');
      return `delete map ${t} ${op.map}`;
    case 'add map element':
      checkName(op.map, 'map');
      return `add element ${t} ${op.map} ${mapElementList(op.elements, undefined)}`;
    case 'delete map element':
      checkName(op.map, 'map');
      return `delete element ${t} ${op.map} ${keyList(op.keys)}`;
    case 'add chain':
      checkName(op.chain, 'chain');
      return op.base ? `add chain ${t} ${op.chain} { ${baseChainHeader(op.base)} }` : `add chain ${t} ${op.chain}`;
    case 'flush chain':
    case 'delete chain':
      checkName(op.chain, 'chain');
      return `${op.kind} ${t} ${op.chain}`;
    case 'add rule':
      checkName(op.chain, 'chain');
      checkText(op.expr, `rule in ${op.chain}`);
      return `add rule ${t} ${op.chain} ${op.expr} comment ${quote(op.comment, 'rule comment')}`;
  }
}

/**
 * Checks one operation as opLine does, refusing what it refuses with the same error, without
 * writing its line: a dataplane that writes no text checks every transaction and renders it
 * only when someone reads the script.
 */
export function checkOp(op: NftOp): void {
  switch (op.kind) {
    case 'add table':
      return;
    case 'add set':
    case 'add element':
    case 'delete element':
      if (op.kind === 'add set') {
        // The declaration's own checks come from opLine itself: a line without elements is short.
        opLine({ family: 'inet', name: 'podroute' }, { ...op, elements: [] });
      } else checkName(op.set, 'set');
      // A whole table's elements: the field named only for those that need a closer look.
      for (let i = 0; i < op.elements.length; i++)
        if (!plainText(op.elements[i], ',{}')) checkText(op.elements[i], `elements[${i}]`, ',{}');
      return;
    case 'add map':
    case 'add map element': {
      const verdicts = op.kind === 'add map' ? op.data === undefined : undefined;
      if (op.kind === 'add map') {
        checkName(op.map, 'map');
        checkType(op.type, `map ${op.map} type`);
        if (op.data !== undefined) checkType(op.data, `map ${op.map} data`);
      } else checkName(op.map, 'map');
      for (let i = 0; i < op.elements.length; i++) {
        const e = op.elements[i];
        if (verdicts ? !plainVerdict(e.verdict) : !plainText(e.verdict, ',{}')) {
          if (verdicts) checkVerdict(e.verdict, `elements[${i}].verdict`);
          else checkKey(e.verdict, `elements[${i}].verdict`);
        }
        if (!plainText(e.key, ',{}')) checkKey(e.key, `elements[${i}].key`);
      }
      if (op.kind === 'add map' && op.typeof !== undefined) checkText(op.typeof, `map ${op.map} typeof`, ',{}');
      return;
    }
    case 'delete map element':
      checkName(op.map, 'map');
      for (let i = 0; i < op.keys.length; i++) if (!plainText(op.keys[i], ',{}')) checkKey(op.keys[i], `keys[${i}]`);
      return;
    case 'add rule':
      checkName(op.chain, 'chain');
      if (!plainText(op.expr)) checkText(op.expr, `rule in ${op.chain}`);
      quote(op.comment, 'rule comment');
      return;
    default:
      // Chains and deletions: one short line each, written and dropped.
      opLine({ family: 'inet', name: 'podroute' }, op);
  }
}

/** The whole transaction, one line per operation. */
export function renderTransaction(table: { readonly family: 'inet'; readonly name: string }, ops: readonly NftOp[]): string {
  let out = '';
  for (const op of ops) out += `${opLine(table, op)}\n`;
  return out;
}

/**
 * What applying `ops` came to, its script written only when read and then kept: the text of a
 * whole table is megabytes that most applies never show. The operations are the values applied
 * (a copy of the list is kept), so a script read after later applies still says this one.
 */
export function appliedResult(
  table: { readonly family: 'inet'; readonly name: string },
  ops: readonly NftOp[],
  error?: string,
): NftApplyResult {
  const applied = ops.slice();
  let script: string | undefined;
  return {
    ok: error === undefined,
    ...(error !== undefined ? { error } : {}),
    get script() {
      script ??= renderTransaction(table, applied);
      return script;
    },
  };
}
