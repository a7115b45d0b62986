// The services compiler: ServiceInput (resolved for this node) → the services' part of the one
// table podroute owns (`inet podroute`), with kube-proxy's nftables-mode semantics. Pure and
// deterministic: the same input, in any order, gives the same part. See README.md for the shape.
//
// Per service port and family (a dual-stack service is two of everything, its IPv4 cluster IP
// going to its IPv4 endpoints):
//   svc-ips-vF          `cluster IP . proto . port` → goto its cluster (or local) chain, and each
//                       external and load-balancer IP → goto its external chain;
//   svc-nodeports-vF    `proto . nodePort` → goto its nodeport (with affinity: external) chain;
//   svc-eps-vF, svc-local-eps-vF, svc-np-eps-vF, svc-np-local-eps-vF
//                       `frontend . i` → endpoint i (`address . port`), over every endpoint or this
//                       node's, the frontend being `address . proto . port` or a NodePort's
//                       `proto . port`: a replaced endpoint is elements here, never a rule;
//   cluster<F>-<id>     masquerade a client from outside the pools; then one rule picks an
//                       endpoint uniformly, `dnat … to ip daddr . meta l4proto . th dport .
//                       numgen random mod N map @svc-eps-vF` (only N is in the rule);
//   local<F>-<id>       the same over this node's endpoints (internal traffic policy Local);
//   external<F>-<id>,   external IPs and load-balancer IPs, and the NodePort: Cluster policy marks
//   nodeport<F>-<id>    for masquerade and picks any endpoint; Local lets pods and the node
//                       itself pick any (the node masqueraded), others keep their address and
//                       pick one of this node's;
//   with session affinity instead kube-proxy's shape: cluster, local and external chains, a
//   client seen lately goes to its endpoint chain, else `numgen random mod N vmap`;
//   endpoint<F>-<…>     (affinity only) record the client in the endpoint's set, DNAT;
//   svc-hairpin-vF      `a . a` per endpoint on this node: a connection DNATed back to its own
//                       source is masqueraded at postrouting;
//   svc-noep-*          frontends with no endpoint → reject (none at all) or drop (none for
//                       its traffic policy), checked by filter chains on new connections.
import { type Cidr, formatAddress, type IpFamily, parseCidr } from '../../ip/index.js';
import { recordNftMapChange, recordNftSetChange, recordPartChange } from '../policy/derivation.js';
import type { NftChain, NftMap, NftMapElement, NftRule, NftSet } from '../policy/nft-model.js';
import type { NftTablePart } from '../policy/table-parts.js';
import { markCanonical } from '../policy/table-state.js';
import { ServiceCompileError } from './compile-error.js';
import {
  byText,
  type CompiledPort,
  compilePort,
  FAMILIES,
  ipOf,
  type Kept,
  type PortShare,
  readAddress,
  sharePort,
} from './compile-port.js';
import type { ServiceInput, ServicePort } from './input.js';
import { serviceInputChange } from './input-change.js';
import {
  CHECK,
  clusterSet,
  DISPATCH,
  type Family,
  FILTER_FORWARD,
  FILTER_INPUT,
  FILTER_OUTPUT,
  HAIRPIN_ID,
  hairpinSet,
  ipsMap,
  MARK_MASQUERADE,
  MASQUERADE_ID,
  NAT_OUTPUT,
  NAT_POSTROUTING,
  NAT_PREROUTING,
  noEndpointIpsMap,
  noEndpointNodePortsMap,
  nodePortIpsSet,
  nodePortsMap,
  REJECT,
  REJECT_ID,
} from './names.js';
import { PortLists, PortListsBuilder } from './port-lists.js';

export interface ServiceCompileOptions {
  /** The packet mark bit that asks for masquerade at postrouting (one bit; default 0x00200000, beside policy's Pass bit). */
  readonly masqueradeMark?: number;
  /**
   * Kept for compatibility, checked and otherwise unused: every port without session affinity
   * now picks its endpoint with one rule and named maps, whatever its number of endpoints.
   */
  readonly endpointMapOver?: number;
}

export const DEFAULT_ENDPOINT_MAP_OVER = 32;

export const DEFAULT_MASQUERADE_MARK = 0x00200000;

export { ENDPOINT_SHARDS } from './compile-port.js';

/** The services' part of the table, for PolicyProgrammer.updatePart('services', …). */
export interface ServiceTable extends NftTablePart {
  /**
   * Frontends (address, protocol and port, or a NodePort) that more than one service port
   * claims: the one whose id sorts first keeps it, as one of them must; each line names both.
   */
  readonly conflicts: readonly string[];
}

const hex32 = (n: number): string => `0x${(n >>> 0).toString(16).padStart(8, '0')}`;

/**
 * Compiles services for one programmer of them (a node agent's feed). It keeps what it compiled:
 * a compile after a few ports changed compiles those alone and changes only their share of the
 * maps, chains and sets, recording what changed (policy/derivation.ts) so the programmer plans
 * that alone; every other port's objects are the very ones they were. Ports are told apart by
 * object, so ports are values: a changed port is a new object, as ServiceInputBuilder hands them
 * over (it compares each port's content once, where it builds them); one edited in place would be
 * served from memory. The options, pools or node addresses changing, or a frontend two ports
 * claim, compile the table whole again (from the ports it remembers).
 */
export class ServiceCompiler {
  private readonly memory = newMemory();
  private built?: Built;
  /** The last context read and what it was read from: the same pools and addresses give the same context. */
  private context?: { readonly clusterCidrs: readonly string[]; readonly nodeAddresses: readonly string[]; readonly context: Context };
  private compiles = 0;
  /** The last compile's ports before and after, by id; undefined when it compiled every port. */
  private stepped?: Memory['stepped'];

  constructor(readonly options: ServiceCompileOptions = {}) {}

  compile(input: ServiceInput): ServiceTable {
    const context = this.readContext(input);
    const was = this.built;
    this.memory.stepped = undefined;
    const stepped = was && step(was, input, context, this.memory);
    // A step that could not finish may have changed the kept state: compile whole.
    this.built = stepped || compileAll(input, context, this.memory);
    this.stepped = !stepped ? undefined : stepped === was ? NOTHING_STEPPED : this.memory.stepped;
    this.compiles++;
    return this.built.table;
  }

  private readContext(input: ServiceInput): Context {
    const had = this.context;
    // An agent hands over new lists of the same pools and addresses with each change.
    if (had && input && sameTexts(had.clusterCidrs, input.clusterCidrs) && sameTexts(had.nodeAddresses, input.nodeAddresses)) {
      if (!Array.isArray(input.services)) throw new ServiceCompileError('services', 'is not a list');
      return had.context;
    }
    const context = readContext(input, this.options);
    this.context = { clusterCidrs: [...(input.clusterCidrs ?? [])], nodeAddresses: [...(input.nodeAddresses ?? [])], context };
    return context;
  }

  /** What the last compile changed, from what it found anyway: no pass over the ports. */
  lastChange(): ServiceCompileChange {
    const s = this.stepped;
    if (!s) return { compile: this.compiles };
    const ports = new Map<string, ServicePortChange>();
    for (const [id, old] of s.before) ports.set(id, { before: old?.port, after: s.after.get(id)?.port });
    return { compile: this.compiles, ports };
  }
}

/** A port one compile changed: what it was and what it is (undefined: it came, or it went). */
export interface ServicePortChange {
  readonly before: ServicePort | undefined;
  readonly after: ServicePort | undefined;
}

/** What one compile changed (ServiceCompiler.lastChange). */
export interface ServiceCompileChange {
  /** The compile's number: one more than the one before (a compile that threw has none). */
  readonly compile: number;
  /**
   * The ports it changed, by id; undefined when it compiled every port (the first compile, the
   * options, pools or node addresses changed, a frontend two ports claim).
   */
  readonly ports?: ReadonlyMap<string, ServicePortChange>;
}

/** Two lists of the same texts (read as they were: a list that is not one is never the same). */
function sameTexts(had: readonly string[], now: readonly string[] | undefined): boolean {
  const list = now ?? [];
  if (!Array.isArray(list) || list.length !== had.length) return false;
  for (let i = 0; i < list.length; i++) if (typeof list[i] !== 'string' || list[i] !== had[i]) return false;
  return true;
}

const NOTHING_STEPPED: NonNullable<Memory['stepped']> = { before: new Map(), after: new Map() };

/** One compile from nothing remembered (a ServiceCompiler remembers ports across compiles). */
export function compileServices(input: ServiceInput, options: ServiceCompileOptions = {}): ServiceTable {
  return compileAll(input, readContext(input, options), newMemory()).table;
}

/** What a compiler keeps from one compile to the next: its ports, and what the last whole compile made. */
interface Memory {
  readonly ports: WeakMap<ServicePort, Kept>;
  /**
   * Each map and set made of the ports' parts (frontends, endpoints, hairpins) by the last whole
   * compile, with the parts it was made of: the very same parts give the very same object, which
   * the table state and the plan then skip without reading it.
   */
  made: Map<string, { readonly chunks: readonly unknown[]; readonly value: unknown }>;
  /** The ids in input order and the order they sort in, as last seen: the same ids, the same order. */
  order?: { readonly ids: readonly string[]; readonly sorted: readonly number[] };
  /** The ports the last step changed, by id, as they were and are (ServiceCompiler.lastChange). */
  stepped?: { readonly before: ReadonlyMap<string, PortEntry | undefined>; readonly after: ReadonlyMap<string, PortEntry | undefined> };
}
const newMemory = (): Memory => ({ ports: new WeakMap(), made: new Map() });

/** The object `build` makes of `chunks`, or the one it made last time of the very same chunks. */
function reuse<T>(memory: Memory, next: Memory['made'], name: string, chunks: readonly unknown[], build: () => T): T {
  const had = memory.made.get(name);
  const same = had !== undefined && had.chunks.length === chunks.length && had.chunks.every((c, i) => c === chunks[i]);
  const entry = same ? had : { chunks, value: build() };
  next.set(name, entry);
  return entry.value as T;
}

/** What the whole table depends on besides the ports: a change of it compiles every port again. */
interface Context {
  readonly mark: number;
  readonly cidrs: Record<Family, string[]>;
  readonly nodeAddresses: readonly { family: IpFamily; text: string }[];
  readonly hasCluster: Record<Family, boolean>;
  readonly variant: string;
  readonly key: string;
}

function readContext(input: ServiceInput, options: ServiceCompileOptions): Context {
  const mark = options.masqueradeMark ?? DEFAULT_MASQUERADE_MARK;
  if (!Number.isInteger(mark) || mark <= 0 || mark > 0xffffffff || (mark & (mark - 1)) !== 0) {
    throw new ServiceCompileError('options.masqueradeMark', `${mark} is not a single mark bit`);
  }
  if (!input || !Array.isArray(input.services)) throw new ServiceCompileError('services', 'is not a list');
  const mapOver = options.endpointMapOver ?? DEFAULT_ENDPOINT_MAP_OVER;
  if (!Number.isInteger(mapOver) || mapOver < 1)
    throw new ServiceCompileError('options.endpointMapOver', `${mapOver} is not a whole number of endpoints`);
  const cidrs = readCidrs(input.clusterCidrs ?? [], 'clusterCidrs');
  const nodeAddresses = (input.nodeAddresses ?? []).map((a, i) => readAddress(a, `nodeAddresses[${i}]`));
  const hasCluster: Record<Family, boolean> = { 4: cidrs[4].length > 0, 6: cidrs[6].length > 0 };
  const variant = `${hasCluster[4]} ${hasCluster[6]} ${mapOver}`;
  const key = `${mark} ${variant} ${cidrs[4].join(',')} ${cidrs[6].join(',')} ${nodeAddresses.map((a) => a.text).join(',')}`;
  return { mark, cidrs, nodeAddresses, hasCluster, variant, key };
}

interface PortEntry {
  readonly port: ServicePort;
  readonly compiled: CompiledPort;
  readonly share: PortShare;
}

/** A compiled table and what it was made of, by port. */
interface Built {
  readonly context: string;
  /** The input compiled last: a change recorded from it (input-change.ts) is believed. */
  input: ServiceInput;
  /** The input's ports, as given (a list of its own, as the caller may change theirs; a step updates it in place). */
  readonly services: ServicePort[];
  /** By id. The maps below are changed in place by a step; the lists never are. */
  readonly ports: Map<string, PortEntry>;
  /** Frontend → the id of the port that holds it. */
  readonly claimed: Map<string, string>;
  readonly hairpinCounts: Record<Family, Map<string, number>>;
  readonly mapLists: Map<string, PortLists<NftMapElement>>;
  readonly chainLists: PortLists<NftChain>;
  readonly setLists: PortLists<NftSet>;
  readonly hairpinLists: Record<Family, PortLists<string>>;
  readonly fixedChains: readonly NftChain[];
  /** Per family: the pools' set and the node addresses' set, when there are any. */
  readonly fixedSets: Record<Family, readonly NftSet[]>;
  readonly maps: Map<string, NftMap>;
  /** The maps' names in the table's order: the frontend maps, then the endpoint maps sorted (made again only when one comes or goes). */
  readonly mapOrder: readonly string[];
  readonly hairpinSets: Record<Family, NftSet>;
  readonly table: ServiceTable;
}

const frontendMaps = (f: Family): [string, string][] => {
  const addr = f === 4 ? 'ipv4_addr' : 'ipv6_addr';
  return [
    [ipsMap(f), `${addr} . inet_proto . inet_service`],
    [nodePortsMap(f), 'inet_proto . inet_service'],
    [noEndpointIpsMap(f), `${addr} . inet_proto . inet_service`],
    [noEndpointNodePortsMap(f), 'inet_proto . inet_service'],
  ];
};
const FRONTEND_MAPS = new Map(FAMILIES.flatMap((f) => frontendMaps(f)));

/** Endpoint maps' heads by name (at most kinds × families × protocols × shards of them). */
const endpointMapHeads = new Map<string, Omit<NftMap, 'elements'>>();

/** A map whose elements are its ports' lists, read one after the other when first asked for. */
function listMap(name: string, lists: PortLists<NftMapElement>): NftMap {
  const type = FRONTEND_MAPS.get(name);
  let head = type !== undefined ? { name, type } : endpointMapHeads.get(name);
  if (!head) endpointMapHeads.set(name, (head = endpointMapHead(name)));
  // Keys and values are made of formatted addresses, protocol names and numbers, verdicts of one
  // space: canonical text, which the table state takes as it is.
  return markCanonical({
    ...head,
    get elements() {
      return lists.all();
    },
  });
}

function hairpinSetOf(f: Family, lists: PortLists<string>): NftSet {
  const type = f === 4 ? 'ipv4_addr' : 'ipv6_addr';
  let elements: string[] | undefined;
  return {
    name: hairpinSet(f),
    type: `${type} . ${type}`,
    interval: false,
    get elements() {
      elements ??= [...new Set(lists.all())].sort(byText);
      return elements;
    },
  };
}

function mapOrder(maps: ReadonlyMap<string, NftMap>): string[] {
  const endpointMaps = [...maps.keys()].filter((n) => !FRONTEND_MAPS.has(n)).sort(byText);
  return [...FRONTEND_MAPS.keys(), ...endpointMaps];
}

/** The part, its chains and sets read from the lists when first asked for (a change taken as such never asks). */
function assemble(b: Omit<Built, 'table'>, conflicts: readonly string[]): ServiceTable {
  let chains: NftChain[] | undefined;
  let sets: NftSet[] | undefined;
  const maps: NftMap[] = [];
  for (const n of b.mapOrder) maps.push(b.maps.get(n)!);
  // The getters hold these and not `b`: a step's `b` is the Built before it spread, which holds
  // that Built's table, whose getters held the one before: every table ever made, kept alive.
  const { setLists, fixedSets, hairpinSets, fixedChains, chainLists } = b;
  return {
    get sets() {
      sets ??= [...setLists.all(), ...FAMILIES.flatMap((f) => [...fixedSets[f].slice(0, 1), hairpinSets[f], ...fixedSets[f].slice(1)])];
      return sets;
    },
    maps,
    get chains() {
      chains ??= [...fixedChains, ...chainLists.all()];
      return chains;
    },
    conflicts,
  };
}

/** Every port compiled (from memory where unchanged), the shared maps made of them. */
function compileAll(input: ServiceInput, context: Context, memory: Memory): Built {
  // The same ids as last time (an endpoint changed): checked and sorted then, in the same order now.
  const last = memory.order;
  let sorted: readonly number[];
  if (last && last.ids.length === input.services.length && input.services.every((s, i) => s?.id === last.ids[i])) sorted = last.sorted;
  else {
    checkIds(input.services);
    sorted = input.services.map((_, i) => i).sort((a, b) => byText(input.services[a]!.id, input.services[b]!.id));
    memory.order = { ids: input.services.map((s) => s.id), sorted };
  }
  const ports = new Map<string, PortEntry>();
  const claimed = new Map<string, string>();
  const conflicts: string[] = [];
  const mapLists = new Map<string, PortListsBuilder<NftMapElement>>();
  const chainLists = new PortListsBuilder<NftChain>();
  const setLists = new PortListsBuilder<NftSet>();
  const hairpinLists = { 4: new PortListsBuilder<string>(), 6: new PortListsBuilder<string>() };
  const hairpinCounts: Record<Family, Map<string, number>> = { 4: new Map(), 6: new Map() };
  for (const index of sorted) {
    const p = input.services[index]!;
    const compiled = compilePort(p, index, context.hasCluster, context.variant, memory.ports);
    const share = sharePort(compiled, claimed, conflicts);
    ports.set(p.id, { port: p, compiled, share });
    if (compiled.chains.length) chainLists.push(p.id, compiled.chains);
    if (compiled.sets.length) setLists.push(p.id, compiled.sets);
    for (const f of FAMILIES) {
      const hairpins = compiled.hairpins[f];
      if (!hairpins.length) continue;
      hairpinLists[f].push(p.id, hairpins);
      for (const e of hairpins) hairpinCounts[f].set(e, (hairpinCounts[f].get(e) ?? 0) + 1);
    }
    for (const [map, list] of share.maps) {
      let lists = mapLists.get(map);
      if (!lists) mapLists.set(map, (lists = new PortListsBuilder()));
      lists.push(p.id, list);
    }
  }
  const made: Memory['made'] = new Map();
  const lists = new Map<string, PortLists<NftMapElement>>([...FRONTEND_MAPS.keys()].map((n) => [n, new PortLists()]));
  for (const [name, l] of mapLists) lists.set(name, l.done());
  const maps = new Map<string, NftMap>();
  for (const [name, l] of lists)
    maps.set(
      name,
      reuse(memory, made, name, l.lists, () => listMap(name, l)),
    );
  const hairpins = { 4: hairpinLists[4].done(), 6: hairpinLists[6].done() };
  const hairpinSets = {
    4: reuse(memory, made, hairpinSet(4), hairpins[4].lists, () => hairpinSetOf(4, hairpins[4])),
    6: reuse(memory, made, hairpinSet(6), hairpins[6].lists, () => hairpinSetOf(6, hairpins[6])),
  };
  memory.made = made;
  const fixedSets = (f: Family): NftSet[] => {
    const type = f === 4 ? 'ipv4_addr' : 'ipv6_addr';
    const out: NftSet[] = [];
    if (context.hasCluster[f]) out.push({ name: clusterSet(f), type, interval: true, elements: context.cidrs[f] });
    const own = context.nodeAddresses.filter((a) => a.family === f).map((a) => a.text);
    if (own.length) out.push({ name: nodePortIpsSet(f), type, interval: false, elements: [...new Set(own)].sort(byText) });
    return out;
  };
  const built: Omit<Built, 'table'> = {
    context: context.key,
    input,
    services: [...input.services],
    ports,
    claimed,
    hairpinCounts,
    mapLists: lists,
    chainLists: chainLists.done(),
    setLists: setLists.done(),
    hairpinLists: hairpins,
    fixedChains: fixedChains(context.mark, context.nodeAddresses),
    fixedSets: { 4: fixedSets(4), 6: fixedSets(6) },
    maps,
    mapOrder: mapOrder(maps),
    hairpinSets,
  };
  return { ...built, table: assemble(built, conflicts) };
}

/** Ids are given, and each once. */
function checkIds(services: readonly ServicePort[]): Map<string, number> {
  const ids = new Map<string, number>();
  services.forEach((s, i) => {
    if (!s || typeof s.id !== 'string' || s.id === '') throw new ServiceCompileError(`services[${i}].id`, 'is empty');
    const had = ids.get(s.id);
    if (had !== undefined) throw new ServiceCompileError(`services[${i}].id`, `${JSON.stringify(s.id)} is services[${had}]'s too`);
    ids.set(s.id, i);
  });
  return ids;
}

/**
 * The table after the ports that are new objects (or new ids, or gone) changed, from `b`: those
 * ports compiled, their shares of the maps, chains and sets replaced, and the change recorded for
 * the programmer. Throws, changing nothing, for a port felix cannot program. Undefined when it
 * cannot be done so (the context changed, a frontend two ports claim, then or now): compile whole,
 * since `b`'s kept state may be changed by then.
 */
function step(b: Built, input: ServiceInput, context: Context, memory: Memory): Built | undefined {
  if (context.key !== b.context || b.table.conflicts.length) return undefined;
  const next = input.services;
  // Which ports changed: as recorded by the input's maker, else one pass over the objects while
  // the ids keep their places, else by id.
  let changed = recordedChange(b, input) ?? changedInPlace(b.services, next);
  const removed: string[] = [];
  let samePlaces = true;
  if (!changed) {
    samePlaces = false;
    const ids = checkIds(next);
    changed = [];
    next.forEach((s, i) => {
      if (b.ports.get(s.id)?.port !== s) changed!.push({ index: i, port: s });
    });
    for (const id of b.ports.keys()) if (!ids.has(id)) removed.push(id);
  }
  if (!changed.length && !removed.length) {
    // The same table, now made of this input: a change recorded from it is believed next time.
    b.input = input;
    return b;
  }
  // Compiled first: a port refused leaves everything as it was.
  const fresh = changed.map(({ index, port }) => ({
    port,
    compiled: compilePort(port, index, context.hasCluster, context.variant, memory.ports, b.ports.get(port.id)?.compiled),
  }));

  const before = new Map<string, PortEntry | undefined>();
  for (const { port } of fresh) before.set(port.id, b.ports.get(port.id));
  for (const id of removed) before.set(id, b.ports.get(id));
  for (const old of before.values()) for (const c of old?.share.claims ?? []) b.claimed.delete(c);
  const after = new Map<string, PortEntry | undefined>();
  const conflicts: string[] = [];
  for (const { port, compiled } of fresh) after.set(port.id, { port, compiled, share: sharePort(compiled, b.claimed, conflicts) });
  if (conflicts.length) return undefined;

  // Changed in place, as the ports are: the table made of `b` has read what it needs of them.
  const mapLists = b.mapLists;
  const mapEdits = new Map<string, { added: NftMapElement[]; removed: NftMapElement[] }>();
  let chainLists = b.chainLists;
  let setLists = b.setLists;
  const hairpinLists = { ...b.hairpinLists };
  const hairpinWas: Record<Family, Map<string, boolean>> = { 4: new Map(), 6: new Map() };
  const chains: NftChain[] = [];
  const removedChains: string[] = [];
  const sets: NftSet[] = [];
  const removedSets: string[] = [];
  for (const [id, old] of before) {
    const now = after.get(id);
    const oldMaps = old?.share.maps ?? NO_MAPS;
    const newMaps = now?.share.maps ?? NO_MAPS;
    for (const [map, o] of oldMaps) shareChange(id, map, o, newMaps.get(map), mapLists, mapEdits);
    for (const [map, n] of newMaps) if (!oldMaps.has(map)) shareChange(id, map, undefined, n, mapLists, mapEdits);
    const oc = old?.compiled.chains ?? [];
    const nc = now?.compiled.chains ?? [];
    if (oc !== nc) {
      chainLists = chainLists.with(id, nc.length ? nc : undefined);
      listChange(oc, nc, chains, removedChains);
    }
    const os = old?.compiled.sets ?? [];
    const ns = now?.compiled.sets ?? [];
    if (os !== ns) {
      setLists = setLists.with(id, ns.length ? ns : undefined);
      listChange(os, ns, sets, removedSets);
    }
    for (const f of FAMILIES) {
      const oh = old?.compiled.hairpins[f] ?? [];
      const nh = now?.compiled.hairpins[f] ?? [];
      if (oh === nh) continue;
      hairpinLists[f] = hairpinLists[f].with(id, nh.length ? nh : undefined);
      const counts = b.hairpinCounts[f];
      for (const e of [...oh, ...nh]) if (!hairpinWas[f].has(e)) hairpinWas[f].set(e, counts.has(e));
      for (const e of oh) {
        const n = counts.get(e)! - 1;
        if (n) counts.set(e, n);
        else counts.delete(e);
      }
      for (const e of nh) counts.set(e, (counts.get(e) ?? 0) + 1);
    }
    if (now) b.ports.set(id, now);
    else b.ports.delete(id);
  }

  const maps = b.maps;
  const changedMaps: NftMap[] = [];
  const removedMaps: string[] = [];
  let mapsCameOrWent = false;
  for (const [name, edit] of mapEdits) {
    const lists = mapLists.get(name)!;
    if (!lists.size && !FRONTEND_MAPS.has(name)) {
      // No port has endpoints there any more (the rules that used it went with their chains).
      mapLists.delete(name);
      maps.delete(name);
      removedMaps.push(name);
      mapsCameOrWent = true;
      continue;
    }
    const had = maps.get(name);
    if (!had) mapsCameOrWent = true;
    if (had && !edit.added.length && !edit.removed.length) continue;
    const map = listMap(name, lists);
    if (had) recordNftMapChange(map, { from: had, added: edit.added, removed: edit.removed });
    maps.set(name, map);
    changedMaps.push(map);
  }
  const hairpinSets = { ...b.hairpinSets };
  for (const f of FAMILIES) {
    if (hairpinLists[f] === b.hairpinLists[f]) continue;
    const added: string[] = [];
    const gone: string[] = [];
    for (const [e, was] of hairpinWas[f]) {
      const is = b.hairpinCounts[f].has(e);
      if (is && !was) added.push(e);
      else if (was && !is) gone.push(e);
    }
    if (!added.length && !gone.length) continue;
    const set = hairpinSetOf(f, hairpinLists[f]);
    recordNftSetChange(set, { from: b.hairpinSets[f], added, removed: gone });
    hairpinSets[f] = set;
    sets.push(set);
  }
  if (samePlaces) for (const { index, port } of changed) b.services[index] = port;
  const built: Omit<Built, 'table'> = {
    ...b,
    input,
    services: samePlaces ? b.services : [...next],
    mapLists,
    chainLists,
    setLists,
    hairpinLists,
    maps,
    mapOrder: mapsCameOrWent ? mapOrder(maps) : b.mapOrder,
    hairpinSets,
  };
  const table = assemble(built, []);
  recordPartChange(table, { from: b.table, sets, maps: changedMaps, chains, removedSets, removedMaps, removedChains });
  memory.stepped = { before, after };
  return { ...built, table };
}

const NO_MAPS: ReadonlyMap<string, readonly NftMapElement[]> = new Map();

/** A port's share of one map replaced in the map's lists, and its elements out and in recorded. */
function shareChange(
  id: string,
  map: string,
  o: readonly NftMapElement[] | undefined,
  n: readonly NftMapElement[] | undefined,
  mapLists: Map<string, PortLists<NftMapElement>>,
  mapEdits: Map<string, { added: NftMapElement[]; removed: NftMapElement[] }>,
): void {
  if (o === n) return;
  mapLists.set(map, (mapLists.get(map) ?? new PortLists()).with(id, n));
  let edit = mapEdits.get(map);
  if (!edit) mapEdits.set(map, (edit = { added: [], removed: [] }));
  elementChange(o ?? [], n ?? [], edit);
}

/**
 * The ports the input's maker recorded as replaced (input-change.ts), when it recorded a change
 * from the input `b` compiled and each port it names is where it says, with its id; undefined
 * otherwise (the caller compares every port).
 */
function recordedChange(b: Built, input: ServiceInput): { index: number; port: ServicePort }[] | undefined {
  const change = serviceInputChange(input);
  if (!change || change.from !== b.input || input.services.length !== b.services.length) return undefined;
  const out: { index: number; port: ServicePort }[] = [];
  for (const { index, port } of change.ports) {
    if (input.services[index] !== port || b.services[index]?.id !== port.id) return undefined;
    if (b.services[index] !== port) out.push({ index, port });
  }
  return out;
}

/**
 * The ports that are new objects, when every port keeps its place and id; undefined when one
 * does not. A function of its own: the engine optimizes a small function's long loop within its
 * first calls, where the step around it, large and called once per change, stays unoptimized,
 * and this loop over every port was most of a step's time.
 */
function changedInPlace(was: readonly ServicePort[], next: readonly ServicePort[]): { index: number; port: ServicePort }[] | undefined {
  if (next.length !== was.length) return undefined;
  const changed: { index: number; port: ServicePort }[] = [];
  for (let i = 0; i < next.length; i++) {
    const s = next[i];
    const w = was[i]!;
    if (s === w) continue;
    if (!s || s.id !== w.id) return undefined;
    changed.push({ index: i, port: s });
  }
  return changed;
}

/** A port's elements in one map before and after, as elements out (each with what it had) and in. */
function elementChange(
  before: readonly NftMapElement[],
  after: readonly NftMapElement[],
  into: { added: NftMapElement[]; removed: NftMapElement[] },
): void {
  // A port's share of a map is a few elements: looked up in place, not through maps of them.
  if (before.length <= 16 && after.length <= 16) {
    for (const e of before) if (verdictIn(after, e.key) !== e.verdict) into.removed.push(e);
    for (const e of after) if (verdictIn(before, e.key) !== e.verdict) into.added.push(e);
    return;
  }
  const was = new Map(before.map((e) => [e.key, e.verdict]));
  const is = new Map(after.map((e) => [e.key, e.verdict]));
  for (const e of before) if (is.get(e.key) !== e.verdict) into.removed.push(e);
  for (const e of after) if (was.get(e.key) !== e.verdict) into.added.push(e);
}

/** The verdict of `key` in `list` (the last element with it, as a map of the list would hold), or undefined. */
function verdictIn(list: readonly NftMapElement[], key: string): string | undefined {
  for (let i = list.length - 1; i >= 0; i--) if (list[i]!.key === key) return list[i]!.verdict;
  return undefined;
}

/** A port's chains or sets before and after: the ones that are new objects, and the names gone. */
function listChange<T extends { readonly name: string }>(before: readonly T[], after: readonly T[], changed: T[], removed: string[]): void {
  const was = new Map(before.map((x) => [x.name, x]));
  for (const x of after) {
    if (was.get(x.name) !== x) changed.push(x);
    was.delete(x.name);
  }
  removed.push(...was.keys());
}

function readCidrs(list: readonly string[], field: string): Record<Family, string[]> {
  const out: Record<Family, Cidr[]> = { 4: [], 6: [] };
  list.forEach((text, i) => {
    try {
      const c = parseCidr(text, `${field}[${i}]`, false);
      out[c.family].push(c);
    } catch (e) {
      throw new ServiceCompileError(`${field}[${i}]`, e instanceof Error ? e.message : String(e));
    }
  });
  // nft refuses overlapping elements in an interval set: a prefix inside another is left out.
  const text = (c: Cidr) => `${formatAddress(c)}/${c.prefixLength}`;
  const merged = (cs: Cidr[]) => {
    const sorted = [...cs].sort((a, b) => a.prefixLength - b.prefixLength);
    const kept: Cidr[] = [];
    for (const c of sorted) if (!kept.some((k) => inside(c, k))) kept.push(c);
    return kept.map(text).sort(byText);
  };
  return { 4: merged(out[4]), 6: merged(out[6]) };
}

function inside(c: Cidr, outer: Cidr): boolean {
  if (c.family !== outer.family || c.prefixLength < outer.prefixLength) return false;
  for (let bit = 0; bit < outer.prefixLength; bit++) {
    const byte = bit >> 3;
    const m = 0x80 >> (bit & 7);
    if ((c.bytes[byte]! & m) !== (outer.bytes[byte]! & m)) return false;
  }
  return true;
}

function fixedChains(mark: number, nodeAddresses: readonly { family: IpFamily }[]): NftChain[] {
  const nodePortMatch = (f: Family) =>
    nodeAddresses.some((a) => a.family === f)
      ? `${ipOf(f)} daddr @${nodePortIpsSet(f)}`
      : `fib daddr type local ${ipOf(f)} daddr != ${f === 4 ? '127.0.0.0/8' : '::1'}`;
  const lookups = (ips: (f: Family) => string, nodePorts: (f: Family) => string): NftRule[] =>
    FAMILIES.flatMap((f) => [
      { expr: `${ipOf(f)} daddr . meta l4proto . th dport vmap @${ips(f)}` },
      { expr: `${nodePortMatch(f)} meta l4proto . th dport vmap @${nodePorts(f)}` },
    ]);
  const nat = (hook: 'prerouting' | 'output' | 'postrouting', priority: number) => ({
    type: 'nat' as const,
    hook,
    priority,
    policy: 'accept' as const,
  });
  // Before DNAT (priority dstnat - 10, as kube-proxy's): the check sees the frontend, not the endpoint.
  const filter = (hook: 'input' | 'forward' | 'output') => ({ type: 'filter' as const, hook, priority: -110, policy: 'accept' as const });
  const check: NftRule[] = [{ expr: `ct state new jump ${CHECK}` }];
  return [
    { name: NAT_PREROUTING, base: nat('prerouting', -100), rules: [{ expr: `jump ${DISPATCH}` }] },
    { name: NAT_OUTPUT, base: nat('output', -100), rules: [{ expr: `jump ${DISPATCH}` }] },
    {
      name: NAT_POSTROUTING,
      base: nat('postrouting', 100),
      rules: [
        {
          expr: `meta mark & ${hex32(mark)} == ${hex32(mark)} meta mark set meta mark & ${hex32(~mark)} counter masquerade fully-random`,
          id: MASQUERADE_ID,
        },
        // Hairpin: DNATed to the very pod that sent it, which would answer itself and not the service.
        ...FAMILIES.map((f) => ({
          expr: `ct status dnat ${ipOf(f)} saddr . ${ipOf(f)} daddr @${hairpinSet(f)} counter masquerade fully-random`,
          id: HAIRPIN_ID,
        })),
      ],
    },
    { name: FILTER_INPUT, base: filter('input'), rules: check },
    { name: FILTER_FORWARD, base: filter('forward'), rules: check },
    { name: FILTER_OUTPUT, base: filter('output'), rules: check },
    { name: DISPATCH, rules: lookups(ipsMap, nodePortsMap) },
    { name: CHECK, rules: lookups(noEndpointIpsMap, noEndpointNodePortsMap) },
    // An ICMP port unreachable, which a TCP client reads as a refused connection (kube-proxy's `reject`).
    { name: REJECT, rules: [{ expr: 'counter reject', id: REJECT_ID }] },
    { name: MARK_MASQUERADE, rules: [{ expr: `meta mark set meta mark | ${hex32(mark)}` }] },
  ];
}

/** An endpoint map (see names.ts) with its typeof declaration, from its name's kind, family and protocol. */
function endpointMapHead(name: string): Omit<NftMap, 'elements'> {
  const m = /^svc-(np-)?(?:local-)?eps-(tcp|udp|sctp)-v([46])-/.exec(name);
  if (!m) throw new Error(`${name} is not an endpoint map's name`);
  const ip = m[3] === '4' ? 'ip' : 'ip6';
  const addr = m[3] === '4' ? 'ipv4_addr' : 'ipv6_addr';
  const byNodePort = m[1] !== undefined;
  const key = byNodePort ? 'meta l4proto . th dport' : `${ip} daddr . meta l4proto . th dport`;
  return {
    name,
    type: byNodePort ? 'inet_proto . inet_service . integer' : `${addr} . inet_proto . inet_service . integer`,
    data: `${addr} . inet_service`,
    typeof: `${key} . numgen random mod 1 : ${ip} daddr . ${m[2]} dport`,
  };
}
