// The scenarios: who the testers are, and the pre-encoded bytes each tester sends in each
// phase, with what the monitor (and the daemon under test) must hold when the phase is over.
import { fileURLToPath } from 'node:url';
import { decodeMessage, encodeMessage, type PathAttributes } from '../../bgp/codec/index.js';
import { readMrtFile } from '../../bgp/mrt/index.js';
import { ipv4NumberAt, parseIpv4Number } from '../../ip/index.js';
import type { Expectation, RouteKey } from './monitor.js';
import {
  announceUpdates,
  announceUpdatesV6,
  NO_EXPORT,
  prefixRange,
  TAG_ASN,
  v4Key,
  v4OfKey,
  v6KeyOfText,
  v6OfKey,
  v6Range48,
  withdrawUpdates,
  withdrawUpdatesV6,
  type V4Prefix,
  type V6Prefix,
} from './wire.js';

export const DUT_ADDRESS = '10.90.0.1';
export const MONITOR_ADDRESS = '10.90.0.100';
export const LINK_PREFIX = 16;
/** The link's IPv6 addresses, for the next hops of IPv6 routes (sessions stay on IPv4). */
export const DUT_ADDRESS6 = 'fd90::1';
export const MONITOR_ADDRESS6 = 'fd90::100';
export const LINK_PREFIX6 = 64;
export const MRT_FILE = fileURLToPath(new URL('../../test/data/updates.20190101.0000.gz', import.meta.url));

export interface Tester {
  address: string;
  /** Its IPv6 address on the link: the next hop of the IPv6 routes it announces. */
  address6: string;
  asn: number;
}

export interface Topology {
  dutAs: number;
  /** The monitor's AS: the daemon's own (iBGP) for eBGP testers, a ToR's AS for iBGP testers. */
  monitorAs: number;
  testers: Tester[];
  /** Testers are iBGP neighbours of the daemon (Calico nodes), not eBGP ones. */
  ibgp: boolean;
  /** Every session carries IPv6 unicast as well as IPv4 (dual stack, as Calico's do). */
  ipv6: boolean;
}

export interface PhasePlan {
  name: string;
  /** Whether the figures of this phase go into the table (a warm-up phase does not). */
  measured: boolean;
  expect: Expectation;
  /** Prefixes the daemon must hold from the testers at the end, when that is meaningful. */
  dutReceived?: number;
  /** Bytes per tester, messages concatenated. */
  bytes: Buffer[];
  messages: number;
  prefixes: number;
  /** Per tester, the prefixes it has announced and not withdrawn at the end of the phase (for the warm variants). */
  held?: V4Prefix[][];
  /** The same for IPv6, in scenarios that announce it. */
  heldV6?: V6Prefix[][];
}

export interface Scenario {
  name: string;
  describe: string;
  testers: number;
  ibgp: boolean;
  /** The sessions carry IPv6 unicast too (the daemon is configured for it). */
  ipv6?: boolean;
  /** Seconds a phase may take before the daemon is declared too slow for it. */
  timeoutSec: number;
  /** Daemons left out of this scenario by default, and why. */
  skip?: Partial<Record<string, string>>;
  /** Builds the phases (in the tester process, before any clock starts). */
  build(topology: Topology): PhasePlan[];
}

export function topologyOf(s: Scenario): Topology {
  const dutAs = s.ibgp ? 64512 : 65000;
  const testers = Array.from({ length: s.testers }, (_, i) => ({
    address: `10.90.0.${11 + i}`,
    address6: `fd90::${11 + i}`,
    asn: s.ibgp ? dutAs : 65001 + i,
  }));
  return { dutAs, monitorAs: s.ibgp ? 65100 : dutAs, testers, ibgp: s.ibgp, ipv6: s.ipv6 ?? false };
}

// NO_EXPORT keeps the daemon from sending each tester every other tester's routes (it would
// then be measured as a route server); the monitor, an iBGP neighbour, still gets them all.
function ebgpAttributes(t: Tester, tag = 0): PathAttributes {
  const communities = [NO_EXPORT];
  if (tag) communities.push(((TAG_ASN << 16) | tag) >>> 0);
  return { origin: 'igp', asPath: [{ type: 'sequence', asns: [t.asn] }], nextHop: t.address, communities };
}

/** The same without NEXT_HOP: an IPv6 route's next hop is in MP_REACH_NLRI. */
function ebgpAttributes6(t: Tester): PathAttributes {
  const { nextHop: _, ...rest } = ebgpAttributes(t);
  return rest;
}

function phase(
  name: string,
  measured: boolean,
  perTester: Buffer[][],
  prefixes: number,
  expect: Expectation,
  dutReceived?: number,
): PhasePlan {
  return {
    name,
    measured,
    expect,
    dutReceived,
    prefixes,
    bytes: perTester.map((m) => Buffer.concat(m)),
    messages: perTester.reduce((n, m) => n + m.length, 0),
  };
}

/** Tester i announces its own `count` /32s from 11.0.0.0 + i·2^20. */
function testerPrefixes(i: number, count: number): V4Prefix[] {
  return prefixRange(parseIpv4Number('11.0.0.0') + i * 0x100000, count);
}

function unique(name: string, testers: number, count: number, timeoutSec: number): Scenario {
  return {
    name,
    testers,
    ibgp: false,
    timeoutSec,
    describe: `${testers} eBGP tester(s) × ${count.toLocaleString('en')} unique /32s, one attribute set each`,
    build(topo) {
      const held = topo.testers.map((_, i) => testerPrefixes(i, count));
      const updates = topo.testers.map((t, i) => announceUpdates(held[i]!, ebgpAttributes(t)));
      const total = testers * count;
      return [{ ...phase('announce', true, updates, total, { size: total, tag: 0 }, total), held }];
    },
  };
}

/** Tester i announces its own `count` /48s from 2a00:i·16::/48 on (each tester's own 2^20). */
function unique6(name: string, testers: number, count: number, timeoutSec: number): Scenario {
  return {
    name,
    testers,
    ibgp: false,
    ipv6: true,
    timeoutSec,
    describe: `${testers} eBGP tester(s) × ${count.toLocaleString('en')} unique IPv6 /48s in MP_REACH_NLRI, one attribute set each`,
    build(topo) {
      const heldV6 = topo.testers.map((_, i) => v6Range48(0x2a00_0000_0000 + i * 0x100000, count));
      const updates = topo.testers.map((t, i) => announceUpdatesV6(heldV6[i]!, ebgpAttributes6(t), t.address6));
      const total = testers * count;
      return [{ ...phase('announce', true, updates, total, { size: total, tag: 0 }, total), held: topo.testers.map(() => []), heldV6 }];
    },
  };
}

const withdrawAll: Scenario = {
  name: 'withdraw',
  testers: 1,
  ibgp: false,
  timeoutSec: 240,
  describe: '1 eBGP tester announces 100,000 /32s (not measured), then withdraws them all',
  build(topo) {
    const prefixes = testerPrefixes(0, 100_000);
    return [
      phase('announce', false, [announceUpdates(prefixes, ebgpAttributes(topo.testers[0]!))], 100_000, { size: 100_000, tag: 0 }, 100_000),
      phase('withdraw', true, [withdrawUpdates(prefixes)], 100_000, { size: 0, tag: 0 }, 0),
    ];
  },
};

const CHURN_PREFIXES = 10_000;
const CHURN_ROUNDS = 10;
const churn: Scenario = {
  name: 'churn',
  testers: 1,
  ibgp: false,
  timeoutSec: 240,
  describe: `1 eBGP tester: ${CHURN_ROUNDS} rounds of announce ${CHURN_PREFIXES.toLocaleString('en')} /32s (tagged with the round) then withdraw, the last round left announced, all sent at once`,
  build(topo) {
    const t = topo.testers[0]!;
    const prefixes = testerPrefixes(0, CHURN_PREFIXES);
    const withdraws = withdrawUpdates(prefixes);
    const stream: Buffer[] = [];
    for (let round = 1; round <= CHURN_ROUNDS; round++) {
      stream.push(...announceUpdates(prefixes, ebgpAttributes(t, round)));
      if (round < CHURN_ROUNDS) stream.push(...withdraws);
    }
    return [phase('churn', true, [stream], CHURN_PREFIXES * (2 * CHURN_ROUNDS - 1), { size: CHURN_PREFIXES, tag: CHURN_ROUNDS })];
  },
};

const CALICO_NODES = 500;
const calico: Scenario = {
  name: 'calico',
  testers: 10,
  ibgp: true,
  timeoutSec: 60,
  describe: `Calico over iBGP: ${CALICO_NODES} nodes (50 per tester session, each its own next hop) × 4 /26 blocks, + a borrowed /32 from every 5th node (5%); the monitor is an eBGP top-of-rack`,
  build(topo) {
    const pool = parseIpv4Number('10.128.0.0');
    const perTester: Buffer[][] = topo.testers.map(() => []);
    const held: V4Prefix[][] = topo.testers.map(() => []);
    let total = 0;
    for (let n = 0; n < CALICO_NODES; n++) {
      const prefixes = prefixRange(pool + n * 4 * 64, 4, 26);
      if (n % 5 === 0) prefixes.push({ addr: (pool + ((n + 1) % CALICO_NODES) * 4 * 64 + 1 + (n % 60)) >>> 0, len: 32 });
      total += prefixes.length;
      const nextHop = `10.90.${1 + (n >> 8)}.${n & 255}`;
      perTester[n % topo.testers.length]!.push(...announceUpdates(prefixes, { origin: 'igp', asPath: [], nextHop, localPref: 100 }));
      held[n % topo.testers.length]!.push(...prefixes);
    }
    return [{ ...phase('announce', true, perTester, total, { size: total, tag: 0 }, total), held }];
  },
};

/**
 * The MRT dump replayed: each collector session's UPDATEs of one family go, in order, to one
 * tester (sessions spread over the testers), re-encoded with the tester's AS prepended, its
 * address as next hop and NO_EXPORT added. IPv4 is the NLRI and withdrawn fields; IPv6 is
 * MP_REACH_NLRI and MP_UNREACH_NLRI. The other family is left out.
 */
function replay(name: string, family: 'ipv4' | 'ipv6'): Scenario {
  const v6 = family === 'ipv6';
  return {
    name,
    testers: 10,
    ibgp: false,
    ipv6: v6,
    timeoutSec: 120,
    describe: `MRT replay of test/data/updates.20190101.0000.gz (${v6 ? 'IPv6' : 'IPv4'} part, real attribute diversity), collector sessions spread over 10 eBGP testers`,
    build(topo) {
      const loopAses = new Set([topo.dutAs, ...topo.testers.map((t) => t.asn)]);
      const sessionTester = new Map<string, number>();
      const perTester: Buffer[][] = topo.testers.map(() => []);
      const tables = topo.testers.map(() => new Set<RouteKey>());
      const keyOf = v6 ? v6KeyOfText : prefixKey;
      let prefixes = 0;
      for (const r of readMrtFile(MRT_FILE)) {
        if (r.kind !== 'message' || r.addPath || r.message[18] !== 2) continue;
        let tester = sessionTester.get(r.peerIp);
        if (tester === undefined) sessionTester.set(r.peerIp, (tester = sessionTester.size % topo.testers.length));
        const t = topo.testers[tester]!;
        const m = decodeMessage(r.message, { fourOctetAs: r.fourOctetAs });
        if (m.type !== 'update') continue;
        const a = m.attributes;
        const isV6 = (mp: { afi: number; safi: number } | undefined) => mp?.afi === 2 && mp.safi === 1;
        const announced = v6 ? (isV6(a.mpReach) ? (a.mpReach?.nlri ?? []) : []) : m.nlri;
        const path = (a.as4Path ?? a.asPath ?? []).flatMap((s) => s.asns);
        const nlri = path.some((asn) => loopAses.has(asn)) ? [] : announced.map((n) => ({ prefix: n.prefix }));
        const withdrawn = (v6 ? (isV6(a.mpUnreach) ? (a.mpUnreach?.withdrawn ?? []) : []) : m.withdrawn).map((n) => ({ prefix: n.prefix }));
        if (nlri.length === 0 && withdrawn.length === 0) continue;
        const attributes: PathAttributes = {};
        if (nlri.length > 0) {
          attributes.origin = a.origin ?? 'igp';
          attributes.asPath = [{ type: 'sequence', asns: [t.asn] }, ...(a.as4Path ?? a.asPath ?? [])];
          if (v6) attributes.mpReach = { afi: 2, safi: 1, nextHop: t.address6, nlri };
          else attributes.nextHop = t.address;
          if (a.med !== undefined) attributes.med = a.med;
          if (a.atomicAggregate) attributes.atomicAggregate = true;
          if (a.as4Aggregator ?? a.aggregator) attributes.aggregator = a.as4Aggregator ?? a.aggregator;
          attributes.communities = [...(a.communities ?? []).filter((c) => c >>> 16 !== TAG_ASN && c !== NO_EXPORT), NO_EXPORT];
          if (a.extendedCommunities?.length) attributes.extendedCommunities = a.extendedCommunities;
          if (a.largeCommunities?.length) attributes.largeCommunities = a.largeCommunities;
        }
        if (v6 && withdrawn.length > 0) attributes.mpUnreach = { afi: 2, safi: 1, withdrawn };
        let bytes: Buffer;
        try {
          bytes = v6
            ? encodeMessage({ type: 'update', withdrawn: [], attributes, nlri: [] })
            : encodeMessage({ type: 'update', withdrawn, attributes, nlri });
        } catch {
          continue; // grew past 4096 octets: rare, left out of both the stream and the expectation
        }
        perTester[tester]!.push(bytes);
        const table = tables[tester]!;
        for (const w of withdrawn) table.delete(keyOf(w.prefix));
        for (const n of nlri) table.add(keyOf(n.prefix));
        prefixes += withdrawn.length + nlri.length;
      }
      const union = new Set<RouteKey>();
      let dutReceived = 0;
      for (const table of tables) {
        dutReceived += table.size;
        for (const k of table) union.add(k);
      }
      const held = tables.map((t) => (v6 ? [] : [...t].map((k) => v4OfKey(k as number))));
      const heldV6 = v6 ? tables.map((t) => [...t].map((k) => v6OfKey(k as string))) : undefined;
      return [{ ...phase('replay', true, perTester, prefixes, { size: union.size, tag: 0 }, dutReceived), held, heldV6 }];
    },
  };
}

const mrt = replay('mrt', 'ipv4');

/**
 * Prefixes a warm variant's warm-up passes through the daemon at the least (up to 20 rounds):
 * one round of a small scenario is too short for V8 to finish tiering its hot paths up
 * (`calico`'s 2,100 prefixes left ~50 compiles to the measured phase). Two rounds at the least:
 * announcing again after a withdrawal takes paths the first announcement did not (prefix
 * numbers reused, a journal with holes), and with one round `1x100k-warm` deoptimized and
 * recompiled `upsert`, `announce` and the export's `process` in its measured phase.
 */
const WARM_UP_PREFIXES = 50_000;
const WARM_UP_MIN_ROUNDS = 2;
const WARM_UP_MAX_ROUNDS = 20;

/**
 * `<name>-warm`: the scenario's phases run unmeasured and every route withdrawn, as many
 * rounds as make WARM_UP_PREFIXES, then the phases again, measured. The daemon has then
 * compiled its hot paths (Node's JIT) and sized its tables, as one that has run for a while
 * meets a re-convergence; the cold figures stay the scenario's own.
 */
export function warm(s: Scenario): Scenario {
  return {
    ...s,
    name: `${s.name}-warm`,
    describe: `${s.describe}; run unmeasured and withdrawn first (a warm daemon)`,
    build(topo) {
      const phases = s.build(topo);
      const last = phases[phases.length - 1];
      const held = last?.held;
      if (held === undefined) throw new Error(`scenario ${s.name}: no warm variant (its last phase does not say what the testers hold)`);
      const heldV6 = last?.heldV6 ?? held.map(() => []);
      const count = [...held, ...heldV6].reduce((n, t) => n + t.length, 0);
      const withdraws = held.map((v4, i) => [...withdrawUpdates(v4), ...withdrawUpdatesV6(heldV6[i] ?? [])]);
      const perRound = phases.reduce((n, p) => n + p.prefixes, 0) + count;
      const rounds = Math.min(WARM_UP_MAX_ROUNDS, Math.max(WARM_UP_MIN_ROUNDS, Math.ceil(WARM_UP_PREFIXES / perRound)));
      const warmUp: PhasePlan[] = [];
      for (let r = 1; r <= rounds; r++) {
        const of = rounds > 1 ? ` ${r}/${rounds}` : '';
        warmUp.push(...phases.map((p) => ({ ...p, name: `${p.name} (warm-up${of})`, measured: false })));
        warmUp.push(phase(`withdraw all${of}`, false, withdraws, count, { size: 0, tag: 0 }, 0));
      }
      return [...warmUp, ...phases];
    },
  };
}

/** The monitor's key of "a.b.c.d/len", host bits cleared as the monitor clears them. */
export function prefixKey(text: string): number {
  const slash = text.indexOf('/');
  const len = Number(text.slice(slash + 1));
  const addr = ipv4NumberAt(text, 0, slash);
  const host = 2 ** (32 - len);
  return v4Key(Math.floor(addr / host) * host, len);
}

const oneBy100k = unique('1x100k', 1, 100_000, 120);

export const SCENARIOS: Scenario[] = [
  oneBy100k,
  unique('10x10k', 10, 10_000, 120),
  { ...unique('10x100k', 10, 100_000, 300), skip: { gobgp: 'GoBGP 3.10 needed ~90 s for 10×10k here; 10×100k would take many minutes' } },
  mrt,
  withdrawAll,
  churn,
  calico,
  warm(oneBy100k),
  warm(calico),
  { ...warm(mrt), skip: { gobgp: 'GoBGP 3.10 takes ~50 s for one replay here' } },
  unique6('1x100k-v6', 1, 100_000, 120),
  replay('mrt-v6', 'ipv6'),
];

/** Not in the default run: the self-tests of the injector and monitor (test/bench/speaker). */
export const SMOKE: Scenario = unique('1x10k', 1, 10_000, 60);
export const SMOKE_V6: Scenario = unique6('1x10k-v6', 1, 10_000, 60);

/** A scenario by name; `<name>-warm` is the warm variant of any scenario that has one. */
export function scenarioByName(name: string): Scenario {
  const byName = (n: string) => [...SCENARIOS, SMOKE, SMOKE_V6].find((x) => x.name === n);
  const base = name.endsWith('-warm') ? byName(name.slice(0, -'-warm'.length)) : undefined;
  const s = byName(name) ?? (base && warm(base));
  if (!s) throw new Error(`unknown scenario ${JSON.stringify(name)}: one of ${SCENARIOS.map((x) => x.name).join(', ')}, or <name>-warm`);
  return s;
}
