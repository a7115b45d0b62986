// The policy compiler: PolicyInput (resolved sets, policies, this node's endpoints, the pools)
// → the one nftables table felix owns. Pure and deterministic: the same input, in any order,
// gives the same table.
//
// Only what this node's endpoints use is compiled, as Calico's felix programs only the policies
// that select a local endpoint: a policy's chain for a direction when an endpoint's tiers in
// that direction name it, and the sets those chains' rules name (plus the pools, for NAT). The
// rest of the input is neither written nor checked beyond its ids; a local pod that comes to use
// a policy brings its chain and sets in, and the last one leaving takes them out.
//
// Shape (inet podroute):
//   forward (filter, hook forward): established and related accept; then `iifname vmap
//     @from-wl` jumps to the source endpoint's egress chain `from-<iface>`, then `to-wl-dispatch`.
//   to-wl-dispatch: `oifname vmap @to-wl` jumps to the destination endpoint's ingress chain
//     `to-<iface>`, then accepts. An egress Allow goes here (`goto`), so pod to pod on one
//     node passes the source's egress policy and then the destination's ingress policy.
//   from-wl / to-wl: named verdict maps, one element per endpoint of this node. A pod that
//     comes or goes here is its two endpoint chains and one element in each map: the dispatch
//     rules never change, so no chain is flushed (as kube-proxy's nftables mode dispatches
//     services through named maps).
//   to-<iface> / from-<iface>: invalid conntrack state drops (and for egress, a source address
//     that does not route back to the pod: Calico's RPF check); then the endpoint's tiers.
//   pi-<policy> / po-<policy>: one policy's rules for one direction, shared by every endpoint it
//     selects; its matches name sets, so a pod add or removal changes set elements only.
//   postrouting (nat, hook postrouting): masquerade from natOutgoing pools to outside every pool.
// Traffic between a pod and its own node (hooks input and output) is not filtered: Kubernetes
// always lets a node reach its pods (kubelet probes) and Calico's default lets pods reach it.
//
// Tiers, and Pass: a tier is inlined in the endpoint chain as jumps to its policies. A policy
// decides with accept (ingress Allow), `goto to-wl-dispatch` (egress Allow) or drop (Deny);
// Pass sets a bit of the packet mark and returns, and every later jump of the tier, and the
// tier's closing rule, runs only while that bit is clear. A policy none of whose rules matched
// returns with the bit clear: the next policy of the tier runs. The tier closes with a counted
// drop (default action Deny) or a counted rule without verdict (Pass: on to the next tier).
// The bit is cleared before each tier (so a mark set elsewhere cannot skip a tier) and after
// the last; past the last tier the packet is accepted, as a pod's namespace profile does.
//
// Staged policies (Policy.staged) count and never decide. An endpoint jumps to a staged
// policy's chain where the policy would run (in its tier, behind the same Pass test as its
// neighbours), so only packets that reach that place are counted. Its chain is its rules as
// `<match> counter return` (`<match> counter` for Log): the first rule that matches counts the
// packet and returns to the endpoint chain, which goes on with the next policy as if the
// staged one had matched nothing. It carries no accept, drop, goto or mark, and is entered by
// `jump` only; so a packet leaves it exactly as it came in. A tier whose policies for an
// endpoint are all staged gets their jumps and no closing rule (it has no default action).
import type { IpFamily } from '../../ip/index.js';
import { ruleCode } from '../flows/decisions.js';
import { flowLogStatements } from '../flows/log-rules.js';
import { PolicyCompileError } from './compile-error.js';
import { addressSetChange, inputChange, namedPortSetChange, recordNftSetChange, recordTableChange } from './derivation.js';
import { changedHostElements, hostElements, intervalElements, namedPortElements, readMember } from './elements.js';
import { PartMemo } from './compile-memo.js';
import {
  type AddressSet,
  type NamedPortSet,
  type NatPool,
  type Policy,
  type PolicyEndpoint,
  type PolicyInput,
  type PolicyRule,
  policyTier,
} from './input.js';
import { matchExpressions, type SetNames } from './match.js';
import {
  addressSetName,
  type Direction,
  endpointChainName,
  FORWARD_CHAIN,
  FROM_ENDPOINT_MAP,
  namedPortSetName,
  natOutgoingId,
  natPoolsSetName,
  POSTROUTING_CHAIN,
  policyChainName,
  poolsSetName,
  rpfId,
  ruleId,
  TO_ENDPOINT_DISPATCH,
  TO_ENDPOINT_MAP,
  tierEndId,
} from './names.js';
import { type NftChain, type NftMap, type NftRule, type NftSet, type NftTable, POLICY_TABLE } from './nft-model.js';

export interface CompileOptions {
  /** The packet mark bit that carries Pass out of a policy chain (one bit; default 0x00100000). */
  readonly passMark?: number;
  /** Priority of the forward filter chain (default 0, nft's `filter`). */
  readonly filterPriority?: number;
  /** Priority of the postrouting nat chain (default 100, nft's `srcnat`). */
  readonly natPriority?: number;
  /** Starts every Log rule's prefix (default "podroute"). */
  readonly logPrefix?: string;
  /** Drop packets from a pod whose source address does not route back to it (default true). */
  readonly rpfCheck?: boolean;
  /** Flow logs: a log rule, rate-limited in the kernel, before every rule that decides. */
  readonly flowLogs?: FlowLogRules;
}

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
}

function checkFlowLogs(f: FlowLogRules | undefined): void {
  if (!f) return;
  const whole = (v: number, min: number, max: number, field: string) => {
    if (!Number.isInteger(v) || v < min || v > max)
      throw new PolicyCompileError(`options.flowLogs.${field}`, `${v} is not a whole number from ${min} to ${max}`);
  };
  whole(f.group, 0, 65535, 'group');
  whole(f.ratePerSecond, 1, 1_000_000, 'ratePerSecond');
  whole(f.burst, 1, 1_000_000, 'burst');
}

export const DEFAULT_PASS_MARK = 0x00100000;

const FAMILIES = [4, 6] as const;
const IFNAME = /^[A-Za-z0-9_.:-]{1,15}$/;
/** The kernel keeps 128 bytes of log prefix, NUL included. */
const MAX_LOG_PREFIX = 127;

const hex32 = (n: number): string => `0x${(n >>> 0).toString(16).padStart(8, '0')}`;
const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

// By list: the calculation graph hands out the same list while none of its items changed.
const idsByList = new WeakMap<readonly object[], ReadonlyMap<string, unknown>>();

function uniqueIds<T extends object>(items: readonly T[], key: (t: T) => string, field: string): ReadonlyMap<string, T> {
  const kept = idsByList.get(items);
  if (kept) return kept as ReadonlyMap<string, T>;
  const out = new Map<string, T>();
  items.forEach((item, i) => {
    const k = key(item);
    if (out.has(k)) throw new PolicyCompileError(`${field}[${i}]`, `${JSON.stringify(k)} appears twice`);
    out.set(k, item);
  });
  idsByList.set(items, out);
  return out;
}

/** Names must stay distinct after shortening: two owners meeting in one name is refused, not merged. */
function assertDistinct(kind: string, named: readonly { readonly name: string }[], owner: (i: number) => string): void {
  const seen = new Map<string, number>();
  named.forEach((item, i) => {
    const other = seen.get(item.name);
    if (other !== undefined) throw new PolicyCompileError(kind, `${owner(other)} and ${owner(i)} both become nft name ${item.name}`);
    seen.set(item.name, i);
  });
}

export function compilePolicy(input: PolicyInput, options: CompileOptions = {}): NftTable {
  const passMark = options.passMark ?? DEFAULT_PASS_MARK;
  if (!Number.isInteger(passMark) || passMark <= 0 || passMark > 0xffffffff || (passMark & (passMark - 1)) !== 0) {
    throw new PolicyCompileError('options.passMark', `${passMark} is not a single mark bit`);
  }
  const optionsText = JSON.stringify([passMark, options.filterPriority, options.natPriority, options.logPrefix, options.rpfCheck]);
  const members = compileMembers(input, optionsText);
  if (members) return members;
  const table = compileWhole(input, options, passMark);
  lastCompiled = { input, options: optionsText, table, places: new Map(table.sets.map((s, i) => [s.name, i])) };
  return table;
}

function compileWhole(input: PolicyInput, options: CompileOptions, passMark: number): NftTable {
  const logPrefix = options.logPrefix ?? 'podroute';
  const setsById = uniqueIds(input.sets, (s) => s.id, 'sets');
  const namedPortsById = uniqueIds(input.namedPortSets, (s) => s.id, 'namedPortSets');
  const policiesById = uniqueIds(input.policies, (p) => p.id, 'policies');
  uniqueIds(input.endpoints, (e) => e.iface, 'endpoints');
  input.endpoints.forEach((e, i) => {
    if (!IFNAME.test(e.iface)) throw new PolicyCompileError(`endpoints[${i}].iface`, `${JSON.stringify(e.iface)} is not an interface name`);
  });

  const mark = {
    set: `meta mark set meta mark | ${hex32(passMark)}`,
    clear: `meta mark set meta mark & ${hex32(~passMark)}`,
    clearTest: `meta mark & ${hex32(passMark)} == 0x00000000`,
  };
  const rpfCheck = options.rpfCheck ?? true;
  checkFlowLogs(options.flowLogs);
  const flowLogs = options.flowLogs;
  // What a policy's or an endpoint's chain text depends on besides its own input object.
  const variant = `${passMark} ${rpfCheck} ${logPrefix} ${flowLogs ? `${flowLogs.group}/${flowLogs.ratePerSecond}/${flowLogs.burst}` : ''}`;

  // The pools are read first: the NAT rules use their sets.
  // Who owns each set and chain, said only when two meet in one name.
  const setOwners: Owner[] = [];
  const pools = poolSets(input.pools, setOwners);

  // Policies in use, per direction: those an endpoint jumps to.
  const used: Record<Direction, Set<string>> = { ingress: new Set(), egress: new Set() };
  const endpoints = [...input.endpoints].sort((a, b) => byText(a.iface, b.iface));
  const chainOwners: Owner[] = ['the forward hook', 'the postrouting hook', 'the ingress dispatch'];
  const chains: NftChain[] = [forwardChain(options.filterPriority ?? 0), natChain(input.pools, options.natPriority ?? 100), DISPATCH_CHAIN];
  for (const e of endpoints) {
    for (const dir of ['egress', 'ingress'] as const) {
      const compiled = endpointChain(e, dir, policiesById, mark, rpfCheck, variant, flowLogs);
      for (const id of compiled.jumps) used[dir].add(id);
      chains.push(compiled.chain);
      chainOwners.push(() => `endpoint ${JSON.stringify(e.iface)} ${dir}`);
    }
  }

  // What the compiled policy chains use: only these sets are written.
  const usedSets = new Set<string>();
  const usedNamedPorts = new Set<string>();
  const policies = [...policiesById.values()].filter((p) => used.ingress.has(p.id) || used.egress.has(p.id));
  for (const p of policies.sort((a, b) => byText(a.id, b.id))) {
    for (const dir of ['ingress', 'egress'] as const) {
      const rules = p[dir];
      if (rules === undefined || !used[dir].has(p.id)) continue;
      const compiled = policyChain(p, dir, rules, setsById, namedPortsById, mark.set, logPrefix, variant, flowLogs);
      for (const id of compiled.sets) usedSets.add(id);
      for (const id of compiled.namedPorts) usedNamedPorts.add(id);
      chains.push(compiled.chain);
      chainOwners.push(() => `policy ${JSON.stringify(p.id)} ${dir}`);
    }
  }
  assertDistinct('chains', chains, (i) => ownerText(chainOwners[i]!));

  const sets: NftSet[] = [...pools, ...addressSets(input, usedSets, setOwners), ...namedPortSets(input, usedNamedPorts, setOwners)];
  const maps = dispatchMaps(input.endpoints, endpoints);
  // Sets and maps share the table's one namespace.
  assertDistinct('sets', [...sets, ...maps], (i) =>
    i < setOwners.length ? ownerText(setOwners[i]!) : `the ${maps[i - sets.length]!.name} dispatch map`,
  );

  return { family: 'inet', name: POLICY_TABLE, sets: sets.sort((a, b) => byText(a.name, b.name)), maps, chains };
}

// Compiled parts by input object (compile-memo.ts): only what changed is compiled again.
const addressSetParts = new PartMemo<AddressSet, readonly NftSet[]>();
const namedPortSetParts = new PartMemo<NamedPortSet, readonly NftSet[]>();
const poolParts = new PartMemo<readonly NatPool[], { readonly sets: readonly NftSet[]; readonly owners: readonly string[] }>();
const natChains = new PartMemo<readonly NatPool[], NftChain>();
const mapParts = new PartMemo<readonly PolicyEndpoint[], NftMap[]>();
const endpointChains = new PartMemo<PolicyEndpoint, EndpointChain>();
const policyChains = new PartMemo<Policy, PolicyChain>();
const forwardChains = new Map<number, NftChain>();

/**
 * A set of hosts is a plain hash set of bare addresses; any other may hold networks and is an
 * interval set. nft 1.0.6 reads back every interval set of the table before it changes an
 * element of any set, so only the sets that need intervals have them.
 */
/** A set's or chain's owner, as error text or what makes it. */
type Owner = string | (() => string);
const ownerText = (o: Owner): string => (typeof o === 'string' ? o : o());

function addressSets(input: PolicyInput, used: ReadonlySet<string>, owners: Owner[]): NftSet[] {
  return input.sets.flatMap((s, i) => {
    if (!used.has(s.id)) return [];
    const owner = () => `set ${JSON.stringify(s.id)}`;
    owners.push(owner, owner);
    return addressSetParts.get(s, '') ?? compileAddressSet(s, () => i);
  });
}

/** A set's kernel sets, one per family; from the ones its members changed from where the calculation graph says how. */
function compileAddressSet(s: AddressSet, index: () => number): readonly NftSet[] {
  // The set's place in the input names a refused member; it is looked up only then.
  const field = (j: number) => `sets[${index()}].members[${j}]`;
  const network = (m: string) => `${m} is a network, and set ${JSON.stringify(s.id)} holds single addresses only`;
  const nftSet = (family: IpFamily, elements: readonly string[]): NftSet => ({
    name: addressSetName(s.id, family),
    type: family === 4 ? 'ipv4_addr' : 'ipv6_addr',
    interval: s.hosts !== true,
    elements,
  });
  const change = s.hosts === true ? addressSetChange(s) : undefined;
  const before = change?.from.hosts === true ? addressSetParts.get(change.from, '') : undefined;
  if (change && before) {
    const old = { 4: before[0]!.elements, 6: before[1]!.elements };
    const d = changedHostElements(old, change.from.members.length, change.added, change.removed, field, network);
    if (d) {
      return addressSetParts.set(
        s,
        '',
        FAMILIES.map((family, k) => {
          if (d.elements[family] === old[family]) return before[k]!;
          const next = nftSet(family, d.elements[family]);
          recordNftSetChange(next, { from: before[k]!, added: d.added[family], removed: d.removed[family] });
          return next;
        }),
      );
    }
  }
  let elements: (family: IpFamily) => string[];
  if (s.hosts === true) {
    const byFamily = hostElements(s.members, field, network);
    elements = (family) => byFamily[family];
  } else {
    const members = s.members.map((m, j) => readMember(m, field(j)));
    elements = (family) => intervalElements(members, family);
  }
  return addressSetParts.set(
    s,
    '',
    FAMILIES.map((family) => nftSet(family, elements(family))),
  );
}

function namedPortSets(input: PolicyInput, used: ReadonlySet<string>, owners: Owner[]): NftSet[] {
  return input.namedPortSets.flatMap((s, i) => {
    if (!used.has(s.id)) return [];
    const owner = () => `named port set ${JSON.stringify(s.id)}`;
    owners.push(owner, owner);
    return namedPortSetParts.get(s, '') ?? compileNamedPortSet(s, () => i);
  });
}

/** A named port set's kernel sets; where it came from one compiled before, each says which elements changed. */
function compileNamedPortSet(s: NamedPortSet, index: () => number): readonly NftSet[] {
  const change = namedPortSetChange(s);
  const before = change && namedPortSetParts.get(change.from, '');
  return namedPortSetParts.set(
    s,
    '',
    FAMILIES.map((family, k) => {
      const elements = namedPortElements(s.members, family, `namedPortSets[${index()}].members`);
      const next: NftSet = {
        name: namedPortSetName(s.id, family),
        type: `${family === 4 ? 'ipv4_addr' : 'ipv6_addr'} . inet_proto . inet_service`,
        interval: false,
        elements,
      };
      const old = before?.[k];
      if (old) {
        const had = new Set(old.elements);
        const has = new Set(elements);
        const added = elements.filter((e) => !had.has(e));
        const removed = old.elements.filter((e) => !has.has(e));
        if (!added.length && !removed.length) return old;
        recordNftSetChange(next, { from: old, added, removed });
      }
      return next;
    }),
  );
}

/** What the last full or member-only compile made, and from what. */
interface Compiled {
  readonly input: PolicyInput;
  /** The options, as one text. */
  readonly options: string;
  readonly table: NftTable;
  /** Each set's place in table.sets, by name. */
  readonly places: ReadonlyMap<string, number>;
}

let lastCompiled: Compiled | undefined;

/**
 * The table for an input whose sets changed members and nothing else, from the last one
 * compiled: the sets this node uses rebuilt (from their own change where the calculation
 * graph recorded it), every other part the very object it was, and the table marked as such
 * a change for the programmer. Undefined when the input is not such a change of the last one,
 * or anything in it would be refused: the whole compile then runs, and refuses it in its words.
 */
function compileMembers(input: PolicyInput, options: string): NftTable | undefined {
  const last = lastCompiled;
  const change = inputChange(input);
  if (!last || !change || change.from !== last.input || last.options !== options) return undefined;
  const sets = last.table.sets.slice();
  const changed: NftSet[] = [];
  const replace = (before: readonly NftSet[], after: readonly NftSet[]) => {
    after.forEach((next, k) => {
      if (next === before[k]) return;
      sets[last.places.get(next.name)!] = next;
      changed.push(next);
    });
  };
  try {
    for (const s of change.sets) {
      const v4 = last.places.get(addressSetName(s.id, 4));
      if (v4 === undefined) continue; // not used here: neither written nor checked
      const before = [last.table.sets[v4]!, last.table.sets[last.places.get(addressSetName(s.id, 6))!]!];
      replace(before, addressSetParts.get(s, '') ?? compileAddressSet(s, () => input.sets.indexOf(s)));
    }
    for (const s of change.namedPortSets) {
      const v4 = last.places.get(namedPortSetName(s.id, 4));
      if (v4 === undefined) continue;
      const before = [last.table.sets[v4]!, last.table.sets[last.places.get(namedPortSetName(s.id, 6))!]!];
      replace(before, namedPortSetParts.get(s, '') ?? compileNamedPortSet(s, () => input.namedPortSets.indexOf(s)));
    }
  } catch (e) {
    if (e instanceof PolicyCompileError) return undefined;
    throw e;
  }
  const table: NftTable = { family: 'inet', name: last.table.name, sets, maps: last.table.maps ?? [], chains: last.table.chains };
  recordTableChange(table, { from: last.table, sets: changed });
  lastCompiled = { ...last, input, table };
  return table;
}

/** Pool sets exist for a family only when one of its pools has natOutgoing: nothing else reads them. */
function poolSets(input: readonly NatPool[], owners: Owner[]): readonly NftSet[] {
  const kept = poolParts.get(input, '');
  if (kept) {
    owners.push(...kept.owners);
    return kept.sets;
  }
  const mine: string[] = [];
  const pools = input.map((p, i) => ({ cidr: readMember(p.cidr, `pools[${i}].cidr`), natOutgoing: p.natOutgoing }));
  const sets = FAMILIES.flatMap((family) => {
    const ofFamily = pools.filter((p) => p.cidr.family === family);
    if (!ofFamily.some((p) => p.natOutgoing)) return [];
    const type = family === 4 ? 'ipv4_addr' : 'ipv6_addr';
    mine.push(`the IPv${family} pools`, `the IPv${family} natOutgoing pools`);
    return [
      {
        name: poolsSetName(family),
        type,
        interval: true,
        elements: intervalElements(
          ofFamily.map((p) => p.cidr),
          family,
        ),
      },
      {
        name: natPoolsSetName(family),
        type,
        interval: true,
        elements: intervalElements(
          ofFamily.filter((p) => p.natOutgoing).map((p) => p.cidr),
          family,
        ),
      },
    ];
  });
  owners.push(...mine);
  return poolParts.set(input, '', { sets, owners: mine }).sets;
}

/** One element per endpoint of this node, sorted by interface: its chain for the direction. */
function dispatchMaps(input: readonly PolicyEndpoint[], sorted: readonly PolicyEndpoint[]): NftMap[] {
  const map = (name: string, dir: Direction): NftMap => ({
    name,
    type: 'ifname',
    elements: sorted.map((e) => ({ key: `"${e.iface}"`, verdict: `jump ${endpointChainName(e.iface, dir)}` })),
  });
  return mapParts.get(input, '') ?? mapParts.set(input, '', [map(FROM_ENDPOINT_MAP, 'egress'), map(TO_ENDPOINT_MAP, 'ingress')]);
}

function forwardChain(priority: number): NftChain {
  let chain = forwardChains.get(priority);
  if (!chain) {
    chain = {
      name: FORWARD_CHAIN,
      base: { type: 'filter', hook: 'forward', priority, policy: 'accept' },
      rules: [
        { expr: 'ct state established,related accept' },
        { expr: `iifname vmap @${FROM_ENDPOINT_MAP}` },
        { expr: `jump ${TO_ENDPOINT_DISPATCH}` },
      ],
    };
    forwardChains.set(priority, chain);
  }
  return chain;
}

const DISPATCH_CHAIN: NftChain = {
  name: TO_ENDPOINT_DISPATCH,
  rules: [{ expr: `oifname vmap @${TO_ENDPOINT_MAP}` }, { expr: 'accept' }],
};

/** Pools are read (and refused) by poolSets first. */
function natChain(pools: readonly NatPool[], priority: number): NftChain {
  const kept = natChains.get(pools, String(priority));
  if (kept) return kept;
  const rules: NftRule[] = [];
  for (const family of FAMILIES) {
    const has = pools.some((p) => p.natOutgoing && readMember(p.cidr, 'pools').family === family);
    if (!has) continue;
    const ip = family === 4 ? 'ip' : 'ip6';
    rules.push({
      expr: `${ip} saddr @${natPoolsSetName(family)} ${ip} daddr != @${poolsSetName(family)} counter masquerade`,
      id: natOutgoingId(family),
    });
  }
  return natChains.set(pools, String(priority), {
    name: POSTROUTING_CHAIN,
    base: { type: 'nat', hook: 'postrouting', priority, policy: 'accept' },
    rules,
  });
}

interface MarkText {
  readonly set: string;
  readonly clear: string;
  readonly clearTest: string;
}

interface EndpointChain {
  readonly chain: NftChain;
  /** The policies it jumps to. */
  readonly jumps: readonly string[];
  /** For each policy its tiers name, in order: whether it has rules for the direction (then it applies). */
  readonly applies: readonly boolean[];
}

/** Whether a kept endpoint chain still holds: every policy it names is there and applies as it did. */
function stillApplies(e: PolicyEndpoint, dir: Direction, policies: ReadonlyMap<string, Policy>, kept: EndpointChain): boolean {
  let i = 0;
  for (const tier of e[dir]) {
    for (const id of policyTier(tier).policies) {
      const p = policies.get(id);
      if (!p || (p[dir] !== undefined) !== kept.applies[i++]) return false;
    }
  }
  return true;
}

function endpointChain(
  e: PolicyEndpoint,
  dir: Direction,
  policies: ReadonlyMap<string, Policy>,
  mark: MarkText,
  rpfCheck: boolean,
  variant: string,
  flowLogs: FlowLogRules | undefined,
): EndpointChain {
  const kept = endpointChains.get(e, `${dir} ${variant}`);
  if (kept && stillApplies(e, dir, policies, kept)) return kept;
  const rules: NftRule[] = [{ expr: 'ct state invalid drop' }];
  if (dir === 'egress' && rpfCheck) rules.push({ expr: 'fib saddr . iif oif missing counter drop', id: rpfId(e.iface) });
  const jumps: string[] = [];
  const applies: boolean[] = [];
  let tiers = 0;
  e[dir].forEach((given, t) => {
    const tier = policyTier(given);
    const applying = tier.policies.filter((id, i) => {
      const p = policies.get(id);
      if (!p) throw new PolicyCompileError(`endpoints[${e.iface}].${dir}[${t}][${i}]`, `no policy ${JSON.stringify(id)}`);
      // A policy without rules for this direction does not apply to it.
      applies.push(p[dir] !== undefined);
      return p[dir] !== undefined;
    });
    if (applying.length === 0) return;
    jumps.push(...applying);
    rules.push({ expr: mark.clear });
    applying.forEach((id, i) => {
      // Only `jump`: a staged chain's `return` must come back here. Reached by `goto`, its
      // return would leave this endpoint chain and skip the policies after it.
      const jump = `jump ${policyChainName(id, dir)}`;
      rules.push({ expr: i === 0 ? jump : `${mark.clearTest} ${jump}` });
    });
    // Staged policies only: no default action, since no enforced policy of the tier selects the endpoint.
    if (applying.every((id) => policies.get(id)!.staged)) return;
    const end = tier.defaultAction === 'Pass' ? '' : ' drop';
    const endId = tierEndId(e.iface, dir, tier.name || t);
    if (flowLogs && end) for (const log of flowLogStatements(flowLogs, 'D', endId)) rules.push({ expr: `${mark.clearTest} ${log}` });
    rules.push({ expr: `${mark.clearTest} counter${end}`, id: endId });
    tiers++;
  });
  if (tiers > 0) rules.push({ expr: mark.clear });
  return endpointChains.set(e, `${dir} ${variant}`, { chain: { name: endpointChainName(e.iface, dir), rules }, jumps, applies });
}

interface PolicyChain {
  readonly chain: NftChain;
  /** The address and named port sets its rules name, by id. */
  readonly sets: readonly string[];
  readonly namedPorts: readonly string[];
}

function policyChain(
  p: Policy,
  dir: Direction,
  rules: readonly PolicyRule[],
  setsById: ReadonlyMap<string, AddressSet>,
  namedPortsById: ReadonlyMap<string, NamedPortSet>,
  passMarkSet: string,
  logPrefix: string,
  variant: string,
  flowLogs: FlowLogRules | undefined,
): PolicyChain {
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
    const action = p.staged ? stagedActionText(rule, field) : actionText(rule, dir, passMarkSet, `${logPrefix} ${id}: `, field);
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

function actionText(rule: PolicyRule, dir: Direction, passMarkSet: string, logPrefix: string, field: string): string {
  switch (rule.action) {
    case 'Allow':
      return dir === 'ingress' ? 'accept' : `goto ${TO_ENDPOINT_DISPATCH}`;
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
