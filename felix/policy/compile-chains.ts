// The chains of the policy table that come from the input: an endpoint's chain per direction
// (its tiers as jumps to policy chains) and a policy's chain per direction (its rules as nft
// statements). Each is kept per input object (compile-memo.ts), so a recompile builds only the
// chains of the endpoints and policies that changed; the whole compile and the compile of a
// change (compile-edit.ts) share them.
import { ruleCode } from '../flows/decisions.js';
import { flowLogStatements } from '../flows/log-rules.js';
import { PolicyCompileError } from './compile-error.js';
import { PartMemo } from './compile-memo.js';
import { type AddressSet, type NamedPortSet, type Policy, type PolicyEndpoint, type PolicyRule, policyTier } from './input.js';
import { matchExpressions, type SetNames } from './match.js';
import { addressSetName, type Direction, endpointChainName, namedPortSetName, policyChainName, rpfId, ruleId, tierEndId } from './names.js';
import type { NftChain, NftRule } from './nft-model.js';

/** The kernel keeps 128 bytes of log prefix, NUL included. */
const MAX_LOG_PREFIX = 127;

/**
 * The `log group` rules of flow logs. Each rule that decides (Allow, Deny, a staged policy's
 * would-be verdicts) and each tier's closing drop gets, just before it, a rule with the same
 * match that hands the packet to nfnetlink_log with a prefix naming it (felix/flows reads it
 * back), limited to `ratePerSecond` (a flood of refused packets costs the kernel a counter
 * check, not a message). Only a connection's first packet reaches policy: replies and the rest
 * of the connection pass by conntrack first.
 */
export interface FlowLogRules {
  readonly group: number;
  readonly ratePerSecond: number;
  readonly burst: number;
  /**
   * Conntrack mark bits (one run, 2 or more) an Allow may write its rule's number into instead of
   * logging (felix/flows/rule-marks.ts): only where no other program of the node uses them.
   */
  readonly ctMark?: number;
}

/** What a chain's text depends on besides its own input object: the options, read once per compile. */
export interface ChainSettings {
  readonly mark: MarkText;
  readonly rpfCheck: boolean;
  readonly logPrefix: string;
  readonly flowLogs: FlowLogRules | undefined;
  /** All of the above as one text: the memo's variant. */
  readonly variant: string;
}

const endpointChains = new PartMemo<PolicyEndpoint, EndpointChain>();
const policyChains = new PartMemo<Policy, PolicyChain>();

export interface MarkText {
  readonly set: string;
  readonly clear: string;
  readonly clearTest: string;
}

export interface EndpointChain {
  readonly chain: NftChain;
  /** The policies it jumps to. */
  readonly jumps: readonly string[];
  /** For each policy its tiers name, in order: whether it has rules for the direction (then it applies). */
  readonly applies: readonly boolean[];
  /** For each policy its tiers name, in order: whether a rule of it for the direction can Pass. */
  readonly passes: readonly boolean[];
}

/** Whether a packet can leave a policy's chain for the direction with the Pass mark set: an enforced Pass rule. */
function canPass(p: Policy, dir: Direction): boolean {
  return !p.staged && p[dir]?.some((r) => r.action === 'Pass') === true;
}

/** Whether a kept endpoint chain still holds: every policy it names is there, and applies and passes as it did. */
function stillApplies(e: PolicyEndpoint, dir: Direction, policies: ReadonlyMap<string, Policy>, kept: EndpointChain): boolean {
  let i = 0;
  for (const tier of e[dir]) {
    for (const id of policyTier(tier).policies) {
      const p = policies.get(id);
      if (!p || (p[dir] !== undefined) !== kept.applies[i] || canPass(p, dir) !== kept.passes[i]) return false;
      i++;
    }
  }
  return true;
}

/**
 * An endpoint's chain for one direction: its tiers as jumps to its policies' chains. A tier none
 * of whose policies can Pass never sets the Pass mark, so it neither clears nor tests it (most
 * tiers: a Kubernetes NetworkPolicy has no Pass): its jumps and closing rule run as they are,
 * whatever a tier before it passed, and the chain clears the mark at its end only if a tier of
 * it can set it.
 */
export function endpointChain(e: PolicyEndpoint, dir: Direction, policies: ReadonlyMap<string, Policy>, s: ChainSettings): EndpointChain {
  const { mark, rpfCheck, variant, flowLogs } = s;
  const kept = endpointChains.get(e, `${dir} ${variant}`);
  if (kept && stillApplies(e, dir, policies, kept)) return kept;
  const rules: NftRule[] = [{ expr: 'ct state invalid drop' }];
  if (dir === 'egress' && rpfCheck) rules.push({ expr: 'fib saddr . iif oif missing counter drop', id: rpfId(e.iface) });
  const jumps: string[] = [];
  const applies: boolean[] = [];
  const passes: boolean[] = [];
  let marks = false;
  e[dir].forEach((given, t) => {
    const tier = policyTier(given);
    const applying = tier.policies.filter((id, i) => {
      const p = policies.get(id);
      if (!p) throw new PolicyCompileError(`endpoints[${e.iface}].${dir}[${t}][${i}]`, `no policy ${JSON.stringify(id)}`);
      // A policy without rules for this direction does not apply to it.
      applies.push(p[dir] !== undefined);
      passes.push(canPass(p, dir));
      return p[dir] !== undefined;
    });
    if (applying.length === 0) return;
    jumps.push(...applying);
    const passing = applying.some((id) => canPass(policies.get(id)!, dir));
    // Unless the tier can pass, the mark is neither cleared nor read in it: no test.
    const unpassed = passing ? `${mark.clearTest} ` : '';
    if (passing) {
      rules.push({ expr: mark.clear });
      marks = true;
    }
    applying.forEach((id, i) => {
      // Only `jump`: a staged chain's `return` must come back here. Reached by `goto`, its
      // return would leave this endpoint chain and skip the policies after it.
      const jump = `jump ${policyChainName(id, dir)}`;
      rules.push({ expr: i === 0 ? jump : `${unpassed}${jump}` });
    });
    // Staged policies only: no default action, since no enforced policy of the tier selects the endpoint.
    if (applying.every((id) => policies.get(id)!.staged)) return;
    const end = tier.defaultAction === 'Pass' ? '' : ' drop';
    const endId = tierEndId(e.iface, dir, tier.name || t);
    if (flowLogs && end) for (const log of flowLogStatements(flowLogs, 'D', endId)) rules.push({ expr: `${unpassed}${log}` });
    rules.push({ expr: `${unpassed}counter${end}`, id: endId });
  });
  if (marks) rules.push({ expr: mark.clear });
  return endpointChains.set(e, `${dir} ${variant}`, { chain: { name: endpointChainName(e.iface, dir), rules }, jumps, applies, passes });
}

export interface PolicyChain {
  readonly chain: NftChain;
  /** The address and named port sets its rules name, by id. */
  readonly sets: readonly string[];
  readonly namedPorts: readonly string[];
}

/** One policy's chain for one direction, shared by every endpoint that jumps to it. */
export function policyChain(
  p: Policy,
  dir: Direction,
  rules: readonly PolicyRule[],
  setsById: ReadonlyMap<string, AddressSet>,
  namedPortsById: ReadonlyMap<string, NamedPortSet>,
  s: ChainSettings,
): PolicyChain {
  const { variant, logPrefix, flowLogs } = s;
  const passMarkSet = s.mark.set;
  const kept = policyChains.get(p, `${dir} ${variant}`);
  // A kept chain holds while the sets it names are there; else it is compiled again, which says what is missing.
  if (kept?.sets.every((id) => setsById.has(id)) && kept.namedPorts.every((id) => namedPortsById.has(id))) return kept;
  const sets = new Set<string>();
  const namedPorts = new Set<string>();
  const names: SetNames = {
    address(id, family, field) {
      if (!setsById.has(id)) throw new PolicyCompileError(field, `no set ${JSON.stringify(id)}`);
      sets.add(id);
      return addressSetName(id, family);
    },
    namedPort(id, family, field) {
      if (!namedPortsById.has(id)) throw new PolicyCompileError(field, `no named port set ${JSON.stringify(id)}`);
      namedPorts.add(id);
      return namedPortSetName(id, family);
    },
  };
  const out: NftRule[] = [];
  rules.forEach((rule, i) => {
    const field = `policies[${p.id}].${dir}[${i}]`;
    const id = ruleId(p.id, dir, i);
    const action = p.staged ? stagedActionText(rule, field) : actionText(rule, passMarkSet, `${logPrefix} ${id}: `, field);
    const code = flowLogs && ruleCode(rule.action, p.staged === true);
    for (const m of matchExpressions(rule.match, names, `${field}.match`)) {
      if (flowLogs && code)
        for (const log of flowLogStatements(flowLogs, code, id)) out.push({ expr: `${m.expr ? `${m.expr} ` : ''}${log}` });
      out.push({ expr: `${m.expr ? `${m.expr} ` : ''}counter ${action}`.trimEnd(), id });
    }
  });
  return policyChains.set(p, `${dir} ${variant}`, {
    chain: { name: policyChainName(p.id, dir), rules: out },
    sets: [...sets],
    namedPorts: [...namedPorts],
  });
}

/**
 * A staged rule's action: count and go back to the endpoint chain (the policy would have
 * decided here, or passed), or for Log count and go on. Never a verdict, never the Pass mark:
 * that is what keeps a staged policy from changing what happens to the packet.
 */
function stagedActionText(rule: PolicyRule, field: string): string {
  switch (rule.action) {
    case 'Allow':
    case 'Deny':
    case 'Pass':
      return 'return';
    case 'Log':
      return '';
    default:
      throw new PolicyCompileError(`${field}.action`, `${JSON.stringify(rule.action)} is not Allow, Deny, Pass or Log`);
  }
}

function actionText(rule: PolicyRule, passMarkSet: string, logPrefix: string, field: string): string {
  switch (rule.action) {
    case 'Allow':
      // Either way it ends one of the forward hook's two base chains: an egress Allow goes on to
      // the second, where the destination's ingress policy runs.
      return 'accept';
    case 'Deny':
      return 'drop';
    case 'Pass':
      return `${passMarkSet} return`;
    case 'Log':
      return `log prefix "${logPrefix.replace(/["\\\n\r]/g, '_').slice(0, MAX_LOG_PREFIX)}"`;
    default:
      throw new PolicyCompileError(`${field}.action`, `${JSON.stringify(rule.action)} is not Allow, Deny, Pass or Log`);
  }
}
