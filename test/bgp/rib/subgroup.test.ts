// Subgroups: peers of one update group in sync share one record of what was sent and one
// queue of UPDATEs. Every member must end up with exactly what it would have alone: checked
// against a peer of the same group that never joins (it negotiated larger messages), through
// random churn, partial reads at each member's own pace, sessions lost, route refreshes and
// members the queue leaves behind.
import assert from 'node:assert/strict';
import { decodeMessage, type BgpMessage, type PathAttributes } from '../../../bgp/codec/index.js';
import { Rib, Subgroup, type RibPeer } from '../../../bgp/rib/index.js';
import { drain, isEor, seq, updatesOf, v4Update, v6Update } from '../../support/rib.js';

type Held = Map<string, string>;

/** The attributes as a member sees them, without the prefixes they came with. */
function canon(a: PathAttributes): string {
  const { mpReach, mpUnreach, ...rest } = a;
  void mpUnreach;
  return JSON.stringify({ ...rest, mpNextHop: mpReach?.nextHop });
}

function apply(held: Held, messages: BgpMessage[]): void {
  for (const m of updatesOf(messages)) {
    for (const w of [...m.withdrawn, ...(m.attributes.mpUnreach?.withdrawn ?? [])]) held.delete(w.prefix);
    const nlri = [...m.nlri, ...(m.attributes.mpReach?.nlri ?? [])];
    for (const n of nlri) held.set(n.prefix, canon(m.attributes));
  }
}

function reflector(): Rib {
  return new Rib({
    localAs: 65000,
    routerId: '10.255.0.1',
    clusterId: '10.255.0.1',
    collectChanges: false,
    reflection: {
      mayReflect: (from, to) => from.config.routeReflectorClient === true || to.routeReflectorClient,
      reflect: (a, from) => {
        a.originatorId ??= from.routerId;
        a.clusterList = ['10.255.0.1', ...(a.clusterList ?? [])];
      },
    },
  });
}

const families = ['ipv4-unicast', 'ipv6-unicast'] as const;

function client(rib: Rib, i: number, extendedMessage = false): RibPeer {
  return rib.addPeer({
    address: `10.0.0.${i}`,
    asn: 65000,
    routerId: `2.2.2.${i}`,
    routeReflectorClient: true,
    families: [...families],
    sendOptions: extendedMessage ? { extendedMessage: true } : undefined,
  });
}

/** A small deterministic generator (the test must fail the same way twice). */
function random(seed: number): (n: number) => number {
  let s = seed >>> 0;
  return (n) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % n;
  };
}

describe('rib: subgroups of peers in sync', () => {
  const maxBehind = Subgroup.maxBehind;
  afterEach(() => {
    Subgroup.maxBehind = maxBehind;
  });

  it("a reflector's clients in sync share one subgroup, and each has every route but its own", () => {
    const rib = reflector();
    const clients = Array.from({ length: 40 }, (_, i) => client(rib, i + 1));
    const held = clients.map(() => new Map() as Held);
    const pullAll = () => {
      for (const [i, c] of clients.entries()) apply(held[i], drain(rib.adjRibOut(c)!).messages);
    };
    pullAll();
    for (const [i, c] of clients.entries())
      rib.update(c, v4Update([`10.${i}.0.0/26`, `10.${i}.0.64/26`], { nextHop: `10.0.0.${i + 1}`, localPref: 100, asPath: [] }));
    pullAll();
    const [group] = rib.updateGroups();
    assert.equal(group.subgroups.length, 1, 'one subgroup for the clients, who are all in sync');
    assert.equal(group.subgroups[0].members.size, 40, 'every client is in it');
    clients.forEach((c, i) => {
      assert.equal(held[i].size, 78, `client ${i + 1} has the 2 routes of each of the 39 others`);
      assert.ok(!held[i].has(`10.${i}.0.0/26`), `client ${i + 1} is not sent its own route`);
      assert.equal(rib.adjRibOut(c)!.sentCount('ipv4-unicast'), 78, `client ${i + 1}'s count of what it was sent`);
      assert.deepEqual(
        rib.adjRibOut(c)!.sentFor('ipv4-unicast', `10.${i}.0.0/26`),
        [],
        `nothing of its own recorded as sent to client ${i + 1}`,
      );
    });
    // A client that comes up now joins at once: its table is the subgroup's, then End-of-RIB.
    const late = client(rib, 99);
    assert.equal(rib.adjRibOut(late)!.subgroup, group.subgroups[0], 'a new client joins the subgroup as its session starts');
    const { messages } = drain(rib.adjRibOut(late)!);
    const eor = messages.findIndex(isEor);
    const lateHeld: Held = new Map();
    apply(lateHeld, messages.slice(0, eor));
    assert.equal(lateHeld.size, 80, 'the new client has every route before its End-of-RIB');
    assert.ok(eor > 0, 'End-of-RIB comes after the table');
    for (const [prefix, attrs] of held[2]) assert.equal(lateHeld.get(prefix), attrs, `the new client has what client 3 has for ${prefix}`);
    // Client 2 takes over client 1's prefix: client 1 now gets it, client 2 is not sent it back.
    rib.update(clients[1], v4Update(['10.0.0.0/26'], { nextHop: '10.0.0.2', localPref: 300, asPath: [] }));
    pullAll();
    assert.equal(held[0].has('10.0.0.0/26'), true, 'client 1 now has the prefix it no longer wins');
    assert.equal(held[1].has('10.0.0.0/26'), false, 'client 2 is not sent its own route back');
    assert.equal(held[2].get('10.0.0.0/26')?.includes('"originatorId":"2.2.2.2"'), true, "the others have client 2's route");
  });

  for (const kind of ['reflector clients', 'eBGP peers of one AS'] as const)
    it(`${kind}: members get what a peer alone gets, through churn, partial reads, lost sessions, refreshes and splits`, () => {
      Subgroup.maxBehind = 1000;
      // SEED=n tries another sequence; the default one is what CI runs.
      const next = random(Number(process.env.SEED ?? 19));
      const ebgpMembers = kind === 'eBGP peers of one AS';
      const rib = ebgpMembers ? new Rib({ localAs: 65000, routerId: '10.255.0.1', collectChanges: false }) : reflector();
      // Members of one AS export the same set for their routes: only the source differs.
      const peer = (i: number, extendedMessage = false) =>
        ebgpMembers
          ? rib.addPeer({
              address: `10.0.0.${i}`,
              asn: 65100,
              routerId: `2.2.2.${i}`,
              localAddress: '10.0.0.254',
              localAddressV6: '2001:db8:ff::254',
              families: [...families],
              sendOptions: extendedMessage ? { extendedMessage: true } : undefined,
            })
          : client(rib, i, extendedMessage);
      const ref = peer(200, true);
      const members = Array.from({ length: 8 }, (_, i) => peer(i + 1));
      const e1 = rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '1.1.1.1', families: [...families] });
      const e2 = rib.addPeer({ address: '192.0.2.2', asn: 65002, routerId: '1.1.1.2' });
      const all = [ref, ...members];
      const held = new Map<RibPeer, Held>(all.map((p) => [p, new Map()]));
      const v4 = Array.from({ length: 48 }, (_, i) => `10.1.${i}.0/24`);
      const v6 = Array.from({ length: 12 }, (_, i) => `2001:db8:${i + 1}::/48`);
      const pull = (p: RibPeer, budget: number) => {
        const out = rib.adjRibOut(p)!;
        apply(held.get(p)!, drain(out, {}, budget).messages);
      };
      // One pull of about `budget` octets, as a session whose socket then fills.
      const pullSome = (p: RibPeer, budget: number) => {
        const messages = rib
          .adjRibOut(p)!
          .pull(budget)
          .map((b) => decodeMessage(b));
        apply(held.get(p)!, messages);
      };
      let largest = 0;
      let splits = 0;
      let joins = 0;
      const check = (step: number) => {
        for (const p of all) pull(p, 1 << 20);
        const r = held.get(ref)!;
        for (const prefix of [...v4, ...v6]) {
          const best = rib.lookup(prefix)?.best;
          assert.equal(r.has(prefix), best !== undefined, `step ${step}: the lone peer has ${prefix} iff there is a best path`);
          for (const m of members) {
            const want = best === undefined || best.peer === m ? undefined : r.get(prefix);
            assert.equal(held.get(m)!.get(prefix), want, `step ${step}: ${m.address} for ${prefix}`);
          }
        }
        for (const m of members) {
          const out = rib.adjRibOut(m)!;
          const count = out.sentCount('ipv4-unicast') + out.sentCount('ipv6-unicast');
          assert.equal(count, held.get(m)!.size, `step ${step}: ${m.address}'s count of what it was sent`);
        }
      };
      for (let step = 0; step < 4000; step++) {
        const op = next(100);
        const inSync = members.map((m) => rib.adjRibOut(m)!.subgroup !== undefined);
        if (op < 40) {
          const src = [e1, e2, ...members][next(10)];
          const ebgp = src === e1 || src === e2;
          const attrs: PathAttributes = ebgp
            ? { asPath: seq(src.asn, 64500 + next(3)), med: next(3), nextHop: src.address }
            : ebgpMembers
              ? { asPath: seq(65100), med: next(2), nextHop: src.address }
              : { asPath: [], localPref: 100 + 50 * next(3), nextHop: src.address };
          if (src === e1 && next(3) === 0)
            rib.update(src, v6Update([v6[next(12)], v6[next(12)]], { ...attrs, nextHop: undefined }, '2001:db8:ff::1'));
          else rib.update(src, v4Update([v4[next(48)], v4[next(48)], v4[next(48)]], attrs));
        } else if (op < 60) {
          const src = [e1, e2, ...members][next(10)];
          rib.update(src, v4Update([], {}, [v4[next(48)], v4[next(48)]]));
        } else if (op < 95) {
          const p = all[next(all.length)];
          // Some read a little, some everything they have.
          if (next(2) === 0) pullSome(p, 100 + next(1500));
          else pull(p, 1 << 20);
        } else if (op < 98) {
          const m = members[next(members.length)];
          rib.peerDown(m);
          rib.peerUp(m);
          held.set(m, new Map());
        } else {
          const m = members[next(members.length)];
          rib.adjRibOut(m)!.refresh(next(2) === 0 ? 'ipv4-unicast' : 'ipv6-unicast');
        }
        members.forEach((m, i) => {
          const now = rib.adjRibOut(m)!.subgroup;
          if (inSync[i] && now === undefined && op < 95) splits++;
          if (!inSync[i] && now !== undefined) joins++;
        });
        for (const g of rib.updateGroups()) for (const s of g.subgroups) largest = Math.max(largest, s.members.size);
        if (step % 250 === 249) check(step);
      }
      check(4000);
      assert.ok(largest >= 5, `members were in sync together (largest subgroup ${largest})`);
      assert.ok(splits > 0, 'members the queue left behind went on alone');
      assert.ok(joins > 10, `members joined again after going alone (${joins} joins)`);
      // Every session down with its routes in place: no record is left holding a set, in a subgroup or alone.
      const [group] = rib.updateGroups().filter((g) => g.members.has(ref));
      assert.ok(group.heldSets > 0, 'the peers held exported sets');
      for (const p of all) rib.peerDown(p);
      assert.equal(group.heldSets, 0, 'every exported set was given back');
    });
});
