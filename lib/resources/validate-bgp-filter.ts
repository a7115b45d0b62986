// BGPFilter, checked as Calico's API server checks it: each rule list holds CIDRs of its own
// family, a rule has an action, cidr and matchOperator come together, prefixLength needs a CIDR
// and stays within the family. The match fields podroute cannot honour are refused by name.
import { formatCidr } from '../../ip/index.js';
import { BGP_FILTER_FIELDS, BGP_FILTER_RULE_FIELDS, BGP_FILTER_RULE_REFUSED } from './calico-fields.js';
import type { Checker, Obj } from './checker.js';
import type { BGPFilterMatchOperator, BGPFilterRule, BGPFilterSpec } from './bgp-filter-types.js';

const OPERATORS: readonly BGPFilterMatchOperator[] = ['Equal', 'NotEqual', 'In', 'NotIn'];

export function checkBGPFilter(c: Checker, s: Obj): BGPFilterSpec {
  c.only(s, BGP_FILTER_FIELDS, 'spec');
  const out: BGPFilterSpec = {};
  for (const list of BGP_FILTER_FIELDS) {
    const rules = c.list(s, list, 'spec', 'a list of rules');
    if (rules === undefined) continue;
    const family = list.endsWith('V6') ? 6 : 4;
    out[list] = rules.map((r, i) => checkRule(c, c.obj(r, `spec.${list}[${i}]`), `spec.${list}[${i}]`, family));
  }
  return out;
}

function checkRule(c: Checker, r: Obj, path: string, family: 4 | 6): BGPFilterRule {
  c.only(r, BGP_FILTER_RULE_FIELDS, path, BGP_FILTER_RULE_REFUSED);
  const rule: BGPFilterRule = { action: required(c, r, path) };
  const cidr = c.str(r, 'cidr', path);
  const op = r.matchOperator === undefined || r.matchOperator === null || r.matchOperator === '' ? undefined : r.matchOperator;
  if ((cidr !== undefined && cidr !== '') !== (op !== undefined))
    c.fail(cidr ? `${path}.matchOperator` : `${path}.cidr`, 'cidr and matchOperator must both be set or both be empty');
  const max = family === 4 ? 32 : 128;
  let cidrLength = 0;
  if (cidr) {
    const parsed = c.cidr(cidr, `${path}.cidr`);
    if (parsed.family !== family)
      c.fail(
        `${path}.cidr`,
        `${cidr} is an IPv${parsed.family} CIDR in a list of IPv${family} rules (${family === 4 ? 'V6' : 'V4'} lists hold those)`,
      );
    rule.cidr = formatCidr(parsed);
    rule.matchOperator = c.oneOf(r, 'matchOperator', path, OPERATORS, 'In');
    cidrLength = parsed.prefixLength;
  }
  const pl = c.optObj(r, 'prefixLength', path);
  if (pl !== undefined) {
    const where = `${path}.prefixLength`;
    if (!cidr) c.fail(where, 'cidr is required when prefixLength is set');
    if (rule.matchOperator === 'Equal' || rule.matchOperator === 'NotEqual')
      c.fail(where, `is taken with matchOperator In and NotIn only: ${rule.matchOperator} compares one prefix, the CIDR itself`);
    c.only(pl, ['min', 'max'], where);
    const min = c.int(pl, 'min', where, 0, max);
    const most = c.int(pl, 'max', where, 0, max);
    if (min !== undefined && most !== undefined && min > most)
      c.fail(`${where}.min`, `${min} is more than max ${most}: the rule could never match`);
    if (most !== undefined && most < cidrLength)
      c.fail(`${where}.max`, `${most} is shorter than ${rule.cidr}'s own length: the rule could never match`);
    rule.prefixLength = { ...(min !== undefined ? { min } : {}), ...(most !== undefined ? { max: most } : {}) };
  }
  const source = c.oneOf(r, 'source', path, ['RemotePeers', ''] as const, '');
  if (source === 'RemotePeers') rule.source = source;
  return rule;
}

function required(c: Checker, r: Obj, path: string): BGPFilterRule['action'] {
  if (r.action === undefined || r.action === null || r.action === '') c.fail(`${path}.action`, 'is required (Accept or Reject)');
  return c.oneOf(r, 'action', path, ['Accept', 'Reject'] as const, 'Accept');
}
