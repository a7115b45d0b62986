// The desired routes kept up to date by deltas. computeDesiredState recomputes the world from
// a FelixInput; a node in a 1,400-node cluster hears thousands of learned-route changes, and
// recomputing 5,600 routes for each is O(N²). This table recomputes only the destinations a
// change touches and remembers which ones changed, so felix writes only those. It holds
// itself to computeDesiredState: for the same input both give the same routes.

import {
  computeDesiredState,
  desiredContext,
  ownBlock,
  remoteDestination,
  remoteRoute,
  workloadRoutes,
  type ContextInput,
  type DesiredContext,
  type DesiredState,
} from './desired.js';
import { EMPTY_INPUT, nextHopKey, type FelixInput, type LearnedNextHop, type LocalWorkload, type RemoteRoute } from './input.js';
import { sameForwarding, type NextHop, type Route } from './model.js';

/** A learned route changed: new next hops, or none when it was withdrawn. */
export interface RemoteRouteChange {
  readonly prefix: string;
  readonly nextHops: readonly LearnedNextHop[];
}

interface Learned {
  readonly input: RemoteRoute;
  /** Problems computing its route (skipped next hops), for the report. */
  problems: readonly string[];
}

interface Local {
  readonly workload: LocalWorkload;
  readonly dsts: readonly string[];
  readonly nextHops: readonly NextHop[];
}

type Context = ContextInput;

export class DesiredTable {
  private context: Context = EMPTY_INPUT;
  private ctx: DesiredContext = desiredContext(EMPTY_INPUT);
  /** Local workloads by host-side interface, in the order given. */
  private locals = new Map<string, Local>();
  /** Destination → interfaces claiming it, first one wins (as computeDesiredState keeps the first). */
  private claims = new Map<string, string[]>();
  private own: string[] = [];
  private ownSet = new Set<string>();
  /** Learned routes by canonical destination. */
  private learned = new Map<string, Learned>();
  /** Prefixes given twice in one whole list, for the report. */
  private duplicates: string[] = [];
  private readonly table = new Map<string, Route>();
  /** Learned and static destinations with no usable next hop, and why. */
  private readonly unroutable = new Map<string, string>();
  private changed = new Set<string>();
  private everything = true;
  private cachedState?: DesiredState;
  private cachedInput?: FelixInput;

  constructor(input: FelixInput = EMPTY_INPUT) {
    this.replace(input);
  }

  get routes(): ReadonlyMap<string, Route> {
    return this.table;
  }

  /** The input this table stands for, as one FelixInput (built on demand). */
  get input(): FelixInput {
    this.cachedInput ??= {
      ...this.context,
      workloads: [...this.locals.values()].map((l) => l.workload),
      ownBlocks: this.own,
      remoteRoutes: [...this.learned.values()].map((l) => l.input),
    };
    return this.cachedInput;
  }

  /** The context's parts as given (cheap: no FelixInput is built). */
  get node(): FelixInput['node'] {
    return this.context.node;
  }

  get deviceNames(): FelixInput['deviceNames'] {
    return this.context.deviceNames;
  }

  get workloads(): LocalWorkload[] {
    return [...this.locals.values()].map((l) => l.workload);
  }

  get devices(): DesiredState['devices'] {
    return this.ctx.devices;
  }

  get neighbors(): DesiredState['neighbors'] {
    return this.ctx.neighbors;
  }

  /** Learned and static routes that have no usable next hop (not programmed), with why. */
  get unresolved(): ReadonlyMap<string, string> {
    return this.unroutable;
  }

  /** Input that was consistent but could not be fully honoured, one line each. */
  problems(): string[] {
    const problems: string[] = [];
    for (const [dst, ifaces] of this.claims)
      for (const extra of ifaces.slice(1))
        problems.push(`workload address ${dst} is on both ${ifaces[0]} and ${extra}; keeping ${ifaces[0]}`);
    for (const [dst, st] of this.ctx.statics) if (st.problem && !this.claims.has(dst) && !this.ownSet.has(dst)) problems.push(st.problem);
    problems.push(...this.duplicates);
    for (const l of this.learned.values()) problems.push(...l.problems);
    return problems;
  }

  /** Routes sorted by destination, neighbours, devices and problems (built on demand). */
  get state(): DesiredState {
    if (!this.cachedState) {
      const routes = [...this.table.values()].sort((a, b) => (a.dst < b.dst ? -1 : a.dst > b.dst ? 1 : 0));
      const unresolved = [...this.unroutable]
        .map(([dst, reason]) => ({ dst, reason }))
        .sort((a, b) => (a.dst < b.dst ? -1 : a.dst > b.dst ? 1 : 0));
      this.cachedState = { routes, neighbors: this.ctx.neighbors, devices: this.ctx.devices, problems: this.problems(), unresolved };
    }
    return this.cachedState;
  }

  /**
   * Destinations whose desired route changed since the last call, or `all` when so much
   * changed (context, whole replacement) that a full comparison is the cheaper plan.
   */
  takeChanged(): { all: boolean; dsts: ReadonlySet<string> } {
    const out = { all: this.everything, dsts: this.changed };
    this.everything = false;
    this.changed = new Set();
    return out;
  }

  /**
   * Applies a partial FelixInput. Every part given is validated before anything changes
   * (FelixInputError naming the field); then only what differs is recomputed.
   */
  update(partial: Partial<FelixInput>): void {
    const contextChanged =
      (partial.node !== undefined && partial.node !== this.context.node) ||
      (partial.pools !== undefined && partial.pools !== this.context.pools) ||
      (partial.remoteVteps !== undefined && partial.remoteVteps !== this.context.remoteVteps) ||
      ('deviceNames' in partial && partial.deviceNames !== this.context.deviceNames) ||
      ('staticRoutes' in partial && partial.staticRoutes !== this.context.staticRoutes) ||
      ('kernelRoutes' in partial && partial.kernelRoutes !== this.context.kernelRoutes);
    if (contextChanged) {
      // The context decides every learned route: recompute the lot from one validated input.
      this.replace({ ...this.input, ...partial });
      return;
    }
    const locals = partial.workloads && this.checkWorkloads(partial.workloads);
    const own = partial.ownBlocks?.map((b, i) => ownBlock(b, `ownBlocks[${i}]`));
    const learned = partial.remoteRoutes && this.checkLearned(partial.remoteRoutes);
    if (locals) this.setLocals(locals);
    if (own) this.setOwn(own);
    if (learned) this.setLearned(learned.byDst, learned.duplicates);
  }

  /** Learned routes that changed, by prefix; validated as a whole before any is taken. */
  changeRemoteRoutes(changes: readonly RemoteRouteChange[]): void {
    const checked = changes.map((c, i) => {
      const field = `remoteRoutes[${i}]`;
      const at = remoteDestination(c, field);
      const problems: string[] = [];
      if (c.nextHops.length > 0) remoteRoute(this.ctx, c, field, problems, at); // throws on bad next hops
      return { at, change: c, problems };
    });
    this.duplicates = []; // they were of a whole list that this change has moved on from
    for (const { at, change, problems } of checked) {
      if (change.nextHops.length === 0) this.learned.delete(at.dst);
      else this.learned.set(at.dst, { input: { prefix: change.prefix, nextHops: change.nextHops }, problems });
      this.recompute(at.dst);
    }
    this.cachedInput = undefined;
  }

  private replace(input: FelixInput): void {
    computeDesiredState(input); // validates the whole input, naming the field, before anything changes
    this.context = {
      node: input.node,
      pools: input.pools,
      remoteVteps: input.remoteVteps,
      deviceNames: input.deviceNames,
      ...(input.staticRoutes !== undefined ? { staticRoutes: input.staticRoutes } : {}),
      ...(input.kernelRoutes !== undefined ? { kernelRoutes: input.kernelRoutes } : {}),
    };
    this.ctx = desiredContext(input);
    this.locals = new Map();
    this.claims = new Map();
    for (const l of this.checkWorkloads(input.workloads ?? [])) this.addLocal(l);
    this.own = (input.ownBlocks ?? []).map((b, i) => ownBlock(b, `ownBlocks[${i}]`));
    this.ownSet = new Set(this.own);
    const learned = this.checkLearned(input.remoteRoutes ?? []);
    this.learned = learned.byDst;
    this.duplicates = learned.duplicates;
    this.table.clear();
    this.unroutable.clear();
    for (const dst of new Set([...this.claims.keys(), ...this.ownSet, ...this.ctx.statics.keys(), ...this.learned.keys()]))
      this.recompute(dst);
    this.everything = true;
    this.changed = new Set();
    this.cachedInput = undefined;
    this.cachedState = undefined;
  }

  private checkWorkloads(workloads: readonly LocalWorkload[]): Local[] {
    return workloads.map((w, i) => ({ workload: w, ...workloadRoutes(w, `workloads[${i}]`) }));
  }

  private checkLearned(routes: readonly RemoteRoute[]): { byDst: Map<string, Learned>; duplicates: string[] } {
    const byDst = new Map<string, Learned>();
    const duplicates: string[] = [];
    routes.forEach((r, i) => {
      const field = `remoteRoutes[${i}]`;
      const at = remoteDestination(r, field);
      const problems: string[] = [];
      remoteRoute(this.ctx, r, field, problems, at); // validates its next hops
      if (byDst.has(at.dst)) {
        duplicates.push(`${field}: ${at.dst} given twice; keeping the first`);
        return;
      }
      byDst.set(at.dst, { input: r, problems });
    });
    return { byDst, duplicates };
  }

  private setLocals(next: readonly Local[]): void {
    const same =
      next.length === this.locals.size &&
      next.every((l) => {
        const had = this.locals.get(l.nextHops[0].dev);
        return had !== undefined && had.dsts.length === l.dsts.length && had.dsts.every((d, i) => d === l.dsts[i]);
      });
    const before = this.locals;
    this.locals = new Map();
    if (!same) {
      // Rebuild the claims in the new order; recompute every destination either side claims.
      const touched = new Set<string>();
      for (const l of before.values()) for (const d of l.dsts) touched.add(d);
      this.claims = new Map();
      for (const l of next) {
        this.addLocal(l);
        for (const d of l.dsts) touched.add(d);
      }
      for (const d of touched) this.recompute(d);
    } else for (const l of next) this.locals.set(l.nextHops[0].dev, l);
    this.cachedInput = undefined;
  }

  private addLocal(l: Local): void {
    const dev = l.nextHops[0].dev;
    this.locals.set(dev, l);
    for (const d of l.dsts) {
      const c = this.claims.get(d);
      if (!c) this.claims.set(d, [dev]);
      else c.push(dev); // twice on one interface is reported as the reference reports it
    }
  }

  private setOwn(next: string[]): void {
    const nextSet = new Set(next);
    const before = this.ownSet;
    this.own = next;
    this.ownSet = nextSet;
    for (const d of before) if (!nextSet.has(d)) this.recompute(d);
    for (const d of nextSet) if (!before.has(d)) this.recompute(d);
    this.cachedInput = undefined;
  }

  private setLearned(next: Map<string, Learned>, duplicates: string[]): void {
    const before = this.learned;
    this.learned = next;
    this.duplicates = duplicates;
    for (const [dst, l] of next) {
      const had = before.get(dst);
      if (!had || !sameHops(had.input.nextHops, l.input.nextHops)) this.recompute(dst);
    }
    for (const dst of before.keys()) if (!next.has(dst)) this.recompute(dst);
    this.cachedInput = undefined;
    this.cachedState = undefined;
  }

  /** One destination, by the precedence computeDesiredState uses: pod, own block, static, learned. */
  private recompute(dst: string): void {
    let route: Route | undefined;
    let unroutable: string | undefined;
    const claim = this.claims.get(dst);
    const l = this.learned.get(dst);
    const st = this.ctx.statics.get(dst);
    if (claim && claim.length > 0) {
      route = { dst, type: 'unicast', nextHops: this.locals.get(claim[0])!.nextHops, reason: 'workload' };
      if (l) l.problems = []; // we are the destination: the learned route is not used
    } else if (this.ownSet.has(dst)) {
      route = { dst, type: 'blackhole', nextHops: [], reason: 'blackhole' };
      if (l) l.problems = [];
    } else if (st) {
      route = st.route;
      unroutable = st.problem;
      if (l) l.problems = []; // the node's own route to its peer wins
    } else if (l) {
      const problems: string[] = [];
      route = remoteRoute(this.ctx, l.input, dst, problems);
      l.problems = problems;
      if (!route && problems.length) unroutable = problems.join('; ');
    }
    if (unroutable === undefined) {
      if (this.unroutable.delete(dst)) this.cachedState = undefined;
    } else if (this.unroutable.get(dst) !== unroutable) {
      this.unroutable.set(dst, unroutable);
      this.cachedState = undefined;
    }
    const had = this.table.get(dst);
    if (had && route && had.reason === route.reason && sameForwarding(had, route)) return;
    if (route) this.table.set(dst, route);
    else if (had) this.table.delete(dst);
    else return;
    this.changed.add(dst);
    this.cachedState = undefined;
  }
}

function sameHops(a: readonly LearnedNextHop[], b: readonly LearnedNextHop[]): boolean {
  return a.length === b.length && a.every((h, i) => h === b[i] || nextHopKey(h) === nextHopKey(b[i]));
}
