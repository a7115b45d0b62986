// The policy compiler: PolicyInput (resolved sets, policies, this node's endpoints, the pools)
// → the one nftables table felix owns. Pure and deterministic: the same input, in any order,
// gives the same table. An input the calculation graph says is the last one with a few parts
// changed is compiled as that change (compile-edit.ts): the same table, built from those parts.
//
// Only what this node's endpoints use is compiled, as Calico's felix programs only the policies
// that select a local endpoint: a policy's chain for a direction when an endpoint's tiers in
// that direction name it, and the sets those chains' rules name (plus the pools, for NAT). The
// rest of the input is neither written nor checked beyond its ids; a local pod that comes to use
// a policy brings its chain and sets in, and the last one leaving takes them out.
//
// Shape (inet podroute):
//   forward (filter, hook forward): established and related accept; then `iifname vmap
//     @from-wl` jumps to the source endpoint's egress chain `from-<iface>`.
//   forward-to-wl (filter, hook forward, one priority after forward): established and related
//     accept; then `oifname vmap @to-wl` jumps to the destination endpoint's ingress chain
//     `to-<iface>`. An egress Allow accepts, which ends `forward` and not the hook: pod to pod
//     on one node passes the source's egress policy and then the destination's ingress policy.
//     Two base chains rather than a `goto` from every egress Allow to an ingress dispatch chain:
//     the kernel checks a change that adds a verdict by walking every path from the base chains,
//     and each such goto was one more path through every ingress chain of the node.
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
// decides with accept (Allow) or drop (Deny);
// Pass sets a bit of the packet mark and returns, and every later jump of the tier, and the
// tier's closing rule, runs only while that bit is clear. A policy none of whose rules matched
// returns with the bit clear: the next policy of the tier runs. The tier closes with a counted
// drop (default action Deny) or a counted rule without verdict (Pass: on to the next tier).
// The bit is cleared before each tier that can Pass (so a mark set elsewhere cannot skip a
// tier) and after the last tier, when one could set it; past the last tier the packet is
// accepted, as a pod's namespace profile does. A tier none of whose policies has a Pass rule (a
// Kubernetes NetworkPolicy never has one) neither clears nor tests the bit: nothing in it sets
// it, and its jumps and closing rule run whatever a tier before it passed. So a Kubernetes-only
// endpoint's chain is its jumps and its drop: two rules fewer a direction to write, and for the
// kernel to check and run.
//
// Staged policies (Policy.staged) count and never decide. An endpoint jumps to a staged
// policy's chain where the policy would run (in its tier, behind the same Pass test as its
// neighbours), so only packets that reach that place are counted. Its chain is its rules as
// `<match> counter return` (`<match> counter` for Log): the first rule that matches counts the
// packet and returns to the endpoint chain, which goes on with the next policy as if the
// staged one had matched nothing. It carries no accept, drop, goto or mark, and is entered by
// `jump` only; so a packet leaves it exactly as it came in (with flow logs' ct mark bits, its
// log rule sets their staged bit on the connection, which no rule reads). A tier whose policies for an
// endpoint are all staged gets their jumps and no closing rule (it has no default action).
import { ctMarkError } from '../flows/rule-marks.js';
import { type ChainSettings, endpointChain, type FlowLogRules, policyChain } from './compile-chains.js';
import {
  byText,
  type CompiledEndpoint,
  type CompiledPolicy,
  type CompiledState,
  compileEdit,
  countUp,
  dispatchElement,
  endpointOwner,
  IFNAME,
  namedPolicies,
  policyOwner,
} from './compile-edit.js';
import { PolicyCompileError } from './compile-error.js';
import { PartMemo } from './compile-memo.js';
import { FAMILIES, kernelAddressSets, kernelNamedPortSets } from './compile-sets.js';
import { inputEdit } from './derivation.js';
import { intervalElements, readMember } from './elements.js';
import type { AddressSet, NamedPortSet, NatPool, PolicyEndpoint, PolicyInput } from './input.js';
import {
  type Direction,
  FORWARD_CHAIN,
  FORWARD_TO_ENDPOINT_CHAIN,
  FROM_ENDPOINT_MAP,
  natOutgoingId,
  natPoolsSetName,
  POSTROUTING_CHAIN,
  poolsSetName,
  TO_ENDPOINT_MAP,
} from './names.js';
import { type NftChain, type NftMap, type NftRule, type NftSet, type NftTable, POLICY_TABLE } from './nft-model.js';

export type { FlowLogRules } from './compile-chains.js';

export interface CompileOptions {
  /** The packet mark bit that carries Pass out of a policy chain (one bit; default 0x00100000). */
  readonly passMark?: number;
  /** Priority of the forward filter chain (default 0, nft's `filter`); the one to endpoints runs one later. */
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

function checkFlowLogs(f: FlowLogRules | undefined): void {
  if (!f) return;
  const whole = (v: number, min: number, max: number, field: string) => {
    if (!Number.isInteger(v) || v < min || v > max)
      throw new PolicyCompileError(`options.flowLogs.${field}`, `${v} is not a whole number from ${min} to ${max}`);
  };
  whole(f.group, 0, 65535, 'group');
  whole(f.ratePerSecond, 1, 1_000_000, 'ratePerSecond');
  whole(f.burst, 1, 1_000_000, 'burst');
  const ctMark = f.ctMark === undefined ? undefined : ctMarkError(f.ctMark);
  if (ctMark) throw new PolicyCompileError('options.flowLogs.ctMark', ctMark);
}

export const DEFAULT_PASS_MARK = 0x00100000;

const hex32 = (n: number): string => `0x${(n >>> 0).toString(16).padStart(8, '0')}`;

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

/** What the last compile made, kept for the next one when that is a change of its input. */
let lastCompiled: CompiledState | undefined;

export function compilePolicy(input: PolicyInput, options: CompileOptions = {}): NftTable {
  const passMark = options.passMark ?? DEFAULT_PASS_MARK;
  if (!Number.isInteger(passMark) || passMark <= 0 || passMark > 0xffffffff || (passMark & (passMark - 1)) !== 0) {
    throw new PolicyCompileError('options.passMark', `${passMark} is not a single mark bit`);
  }
  checkFlowLogs(options.flowLogs);
  const settings = chainSettings(options, passMark);
  const optionsText = `${settings.variant} ${options.filterPriority ?? 0} ${options.natPriority ?? 100}`;
  const last = lastCompiled;
  // Inputs are not changed in place: the input compiled last, with the same options, is that table.
  if (last && last.input === input && last.options === optionsText) return last.table;
  const edit = last && last.options === optionsText ? inputEdit(input) : undefined;
  if (last && edit?.from === last.input) {
    // The edit changes what `last` keeps in place: it is no one's once the edit has begun.
    lastCompiled = undefined;
    const next = compileEdit(input, edit, last);
    if (next) {
      lastCompiled = next;
      return next.table;
    }
  }
  const state = compileWhole(input, options, settings, optionsText);
  lastCompiled = state;
  return state.table;
}

/**
 * The whole compile, neither using nor keeping what the last compile made: what a compile of a
 * change must equal.
 */
export function compileFromScratch(input: PolicyInput, options: CompileOptions = {}): NftTable {
  const kept = lastCompiled;
  try {
    lastCompiled = undefined;
    return compilePolicy(input, options);
  } finally {
    lastCompiled = kept;
  }
}

function chainSettings(options: CompileOptions, passMark: number): ChainSettings {
  const mark = {
    set: `meta mark set meta mark | ${hex32(passMark)}`,
    clear: `meta mark set meta mark & ${hex32(~passMark)}`,
    clearTest: `meta mark & ${hex32(passMark)} == 0x00000000`,
  };
  const logPrefix = options.logPrefix ?? 'podroute';
  const rpfCheck = options.rpfCheck ?? true;
  const flowLogs = options.flowLogs;
  // What a policy's or an endpoint's chain text depends on besides its own input object.
  const variant = `${passMark} ${rpfCheck} ${logPrefix} ${flowLogs ? `${flowLogs.group}/${flowLogs.ratePerSecond}/${flowLogs.burst}/${flowLogs.ctMark ?? ''}` : ''}`;
  return { mark, rpfCheck, logPrefix, flowLogs, variant };
}

function compileWhole(input: PolicyInput, options: CompileOptions, settings: ChainSettings, optionsText: string): CompiledState {
  const setsById = uniqueIds(input.sets, (s) => s.id, 'sets');
  const namedPortsById = uniqueIds(input.namedPortSets, (s) => s.id, 'namedPortSets');
  const policiesById = uniqueIds(input.policies, (p) => p.id, 'policies');
  uniqueIds(input.endpoints, (e) => e.iface, 'endpoints');
  input.endpoints.forEach((e, i) => {
    if (!IFNAME.test(e.iface)) throw new PolicyCompileError(`endpoints[${i}].iface`, `${JSON.stringify(e.iface)} is not an interface name`);
  });

  // The pools are read first: the NAT rules use their sets.
  // Who owns each set and chain, said only when two meet in one name.
  const setOwners: Owner[] = [];
  const pools = poolSets(input.pools, setOwners);

  // Policies in use, per direction: those an endpoint jumps to, and how many endpoint chains do.
  const jumps: Record<Direction, Map<string, number>> = { ingress: new Map(), egress: new Map() };
  const endpoints = [...input.endpoints].sort((a, b) => byText(a.iface, b.iface));
  const chainOwners: Owner[] = ['the forward hook', 'the postrouting hook', 'the forward hook to endpoints'];
  const filterPriority = options.filterPriority ?? 0;
  const fixedChains = [
    forwardChain(filterPriority),
    natChain(input.pools, options.natPriority ?? 100),
    toEndpointChain(filterPriority + 1),
  ];
  const chains: NftChain[] = [...fixedChains];
  const compiledEndpoints: { endpoint: PolicyEndpoint; compiled: CompiledEndpoint['compiled'] }[] = [];
  for (const e of endpoints) {
    const compiled = {
      egress: endpointChain(e, 'egress', policiesById, settings),
      ingress: endpointChain(e, 'ingress', policiesById, settings),
    };
    for (const dir of ['egress', 'ingress'] as const) {
      for (const id of compiled[dir].jumps) countUp(jumps[dir], id);
      chains.push(compiled[dir].chain);
      chainOwners.push(() => `endpoint ${JSON.stringify(e.iface)} ${dir}`);
    }
    compiledEndpoints.push({ endpoint: e, compiled });
  }

  // What the compiled policy chains use: only these sets are written.
  const setUses = new Map<string, number>();
  const namedPortUses = new Map<string, number>();
  const policyChains: Record<Direction, Map<string, CompiledPolicy>> = { ingress: new Map(), egress: new Map() };
  const policies = [...policiesById.values()].filter((p) => jumps.ingress.has(p.id) || jumps.egress.has(p.id));
  for (const p of policies.sort((a, b) => byText(a.id, b.id))) {
    for (const dir of ['ingress', 'egress'] as const) {
      const rules = p[dir];
      if (rules === undefined || !jumps[dir].has(p.id)) continue;
      const compiled = policyChain(p, dir, rules, setsById, namedPortsById, settings);
      for (const id of compiled.sets) countUp(setUses, id);
      for (const id of compiled.namedPorts) countUp(namedPortUses, id);
      chains.push(compiled.chain);
      chainOwners.push(() => `policy ${JSON.stringify(p.id)} ${dir}`);
      policyChains[dir].set(p.id, { compiled, chain: compiled.chain });
    }
  }
  assertDistinct('chains', chains, (i) => ownerText(chainOwners[i]!));

  const sets: NftSet[] = [...pools, ...addressSets(input, setUses, setOwners), ...namedPortSets(input, namedPortUses, setOwners)];
  const maps = dispatchMaps(input.endpoints, endpoints);
  // Sets and maps share the table's one namespace.
  assertDistinct('sets', [...sets, ...maps], (i) =>
    i < setOwners.length ? ownerText(setOwners[i]!) : `the ${maps[i - sets.length]!.name} dispatch map`,
  );
  const table: NftTable = { family: 'inet', name: POLICY_TABLE, sets: sets.sort((a, b) => byText(a.name, b.name)), maps, chains };

  // What the next compile of a change of this input starts from.
  const state: CompiledState = {
    input,
    options: optionsText,
    settings,
    table,
    fixedChains,
    setsById: new Map(setsById),
    namedPortsById: new Map(namedPortsById),
    policiesById: new Map(policiesById),
    endpoints: new Map(),
    ifaces: endpoints.map((e) => e.iface),
    naming: new Map(),
    jumps,
    policyChains,
    policyOrder: policies.map((p) => p.id),
    setUses,
    namedPortUses,
    chainOwners: new Map(),
  };
  compiledEndpoints.forEach(({ endpoint, compiled }, i) => {
    state.endpoints.set(endpoint.iface, {
      endpoint,
      compiled,
      chains: { egress: compiled.egress.chain, ingress: compiled.ingress.chain },
      from: maps[0]!.elements[i]!,
      to: maps[1]!.elements[i]!,
    });
    for (const id of namedPolicies(endpoint)) {
      let ifaces = state.naming.get(id);
      if (!ifaces) state.naming.set(id, (ifaces = new Set()));
      ifaces.add(endpoint.iface);
    }
    for (const dir of ['egress', 'ingress'] as const) state.chainOwners.set(compiled[dir].chain.name, endpointOwner(endpoint.iface, dir));
  });
  for (const [i, c] of fixedChains.entries()) state.chainOwners.set(c.name, `fixed ${i}`);
  for (const dir of ['ingress', 'egress'] as const)
    for (const [id, pc] of policyChains[dir]) state.chainOwners.set(pc.chain.name, policyOwner(id, dir));
  return state;
}

// Compiled parts by input object (compile-memo.ts): only what changed is compiled again.
const poolParts = new PartMemo<readonly NatPool[], { readonly sets: readonly NftSet[]; readonly owners: readonly string[] }>();
const natChains = new PartMemo<readonly NatPool[], NftChain>();
const mapParts = new PartMemo<readonly PolicyEndpoint[], NftMap[]>();
const forwardChains = new Map<number, NftChain>();
const toEndpointChains = new Map<number, NftChain>();

/** A set's or chain's owner, as error text or what makes it. */
type Owner = string | (() => string);
const ownerText = (o: Owner): string => (typeof o === 'string' ? o : o());

function addressSets(input: PolicyInput, used: ReadonlyMap<string, number>, owners: Owner[]): NftSet[] {
  return input.sets.flatMap((s: AddressSet, i) => {
    if (!used.has(s.id)) return [];
    const owner = () => `set ${JSON.stringify(s.id)}`;
    owners.push(owner, owner);
    return kernelAddressSets(s, () => i);
  });
}

function namedPortSets(input: PolicyInput, used: ReadonlyMap<string, number>, owners: Owner[]): NftSet[] {
  return input.namedPortSets.flatMap((s: NamedPortSet, i) => {
    if (!used.has(s.id)) return [];
    const owner = () => `named port set ${JSON.stringify(s.id)}`;
    owners.push(owner, owner);
    return kernelNamedPortSets(s, () => i);
  });
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
    elements: sorted.map((e) => dispatchElement(e.iface, dir)),
  });
  return mapParts.get(input, '') ?? mapParts.set(input, '', [map(FROM_ENDPOINT_MAP, 'egress'), map(TO_ENDPOINT_MAP, 'ingress')]);
}

function forwardChain(priority: number): NftChain {
  let chain = forwardChains.get(priority);
  if (!chain) {
    chain = {
      name: FORWARD_CHAIN,
      base: { type: 'filter', hook: 'forward', priority, policy: 'accept' },
      rules: [{ expr: 'ct state established,related accept' }, { expr: `iifname vmap @${FROM_ENDPOINT_MAP}` }],
    };
    forwardChains.set(priority, chain);
  }
  return chain;
}

/** Runs after `forward`, which an egress Allow ends with accept. */
function toEndpointChain(priority: number): NftChain {
  let chain = toEndpointChains.get(priority);
  if (!chain) {
    chain = {
      name: FORWARD_TO_ENDPOINT_CHAIN,
      base: { type: 'filter', hook: 'forward', priority, policy: 'accept' },
      rules: [{ expr: 'ct state established,related accept' }, { expr: `oifname vmap @${TO_ENDPOINT_MAP}` }],
    };
    toEndpointChains.set(priority, chain);
  }
  return chain;
}

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
