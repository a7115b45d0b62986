import assert from 'node:assert/strict';
import { CFG, FOLD } from '../../../felix/flows/batch.js';
import type { ConntrackEvent } from '../../../felix/flows/conntrack-event.js';
import { FlowCorrelator, type FlowObservation } from '../../../felix/flows/correlate.js';
import { type Decision, decisionMarks } from '../../../felix/flows/decisions.js';
import type { LoggedPacket } from '../../../felix/flows/nflog.js';
import type { FlowTuple } from '../../../felix/flows/tuple.js';
import { ctMarkLayout, ruleMarkNumber } from '../../../felix/flows/rule-marks.js';
import type { PolicyInput } from '../../../felix/policy/input.js';
import { ruleId } from '../../../felix/policy/names.js';

const allow: Decision = { code: 'A', tier: 'default', policy: 'knp.default.web', rule: 'ingress/0', direction: 'ingress' };
const deny: Decision = { code: 'D', tier: 'security', policy: 'sec.block', rule: 'ingress/1', direction: 'ingress' };
const denyNatted: Decision = { ...deny, code: 'DN' };
const staged: Decision = { code: 'SD', tier: 'security', policy: 'staged:sec.try', rule: 'ingress/0', direction: 'ingress' };
const decisions = new Map([
  ['pr|A|x', allow],
  ['pr|D|x', deny],
  ['pr|DN|x', denyNatted],
  ['pr|SD|x', staged],
]);
const t = (sport: number, dst = '10.65.0.3', dport = 80): FlowTuple => ({ proto: 6, src: '10.65.0.2', sport, dst, dport });
const ct = (kind: 'new' | 'destroy', id: number, orig: FlowTuple, replySrc = orig.dst, replyPort = orig.dport): ConntrackEvent => ({
  kind,
  id,
  orig,
  reply: { proto: orig.proto, src: replySrc, sport: replyPort, dst: orig.src, dport: orig.sport },
  status: 0,
  mark: 0,
  packets: kind === 'destroy' ? 10 : 1,
  bytes: kind === 'destroy' ? 1000 : 60,
});

/** A logged packet as the rule saw it (after DNAT). */
const logged = (prefix: string, seen: FlowTuple): LoggedPacket => ({ prefix, tuple: seen, bytes: 60 });

describe('felix/flows correlator', () => {
  let now = 0;
  let out: FlowObservation[];
  let c: FlowCorrelator;
  beforeEach(() => {
    now = 1_000;
    out = [];
    c = new FlowCorrelator(decisions, (o) => out.push(o), { now: () => now, pendingMs: 100 });
  });
  afterEach(() => c.close());

  it('an Allow logged before the NEW names the connection, and its DESTROY carries the counts', () => {
    c.packet(logged('pr|SD|x', t(1)));
    c.packet(logged('pr|A|x', t(1)));
    c.conntrack(ct('new', 7, t(1)));
    c.conntrack(ct('destroy', 7, t(1)));
    assert.deepEqual(
      out.map((o) => [o.phase, o.decision?.policy, o.staged.map((s) => s.policy), o.bytes]),
      [
        ['start', 'knp.default.web', ['staged:sec.try'], 60],
        ['end', 'knp.default.web', ['staged:sec.try'], 1000],
      ],
    );
  });

  it('a NEW before its Allow waits for it, and a DESTROY meanwhile waits behind the start', () => {
    c.conntrack(ct('new', 8, t(2)));
    c.conntrack(ct('destroy', 8, t(2)));
    assert.equal(out.length, 0, 'nothing told before the decision');
    c.packet(logged('pr|A|x', t(2)));
    assert.deepEqual(
      out.map((o) => [o.phase, o.decision?.rule]),
      [
        ['start', 'ingress/0'],
        ['end', 'ingress/0'],
      ],
    );
  });

  it('a connection no policy decided is told when the wait ends, with no decision', async () => {
    c = new FlowCorrelator(decisions, (o) => out.push(o), { pendingMs: 20 });
    c.conntrack(ct('new', 9, t(3)));
    await new Promise((r) => setTimeout(r, 60));
    assert.deepEqual(
      out.map((o) => [o.phase, o.decision]),
      [['start', null]],
    );
  });

  it('a DNATed connection is the Service address as sent and the endpoint it went to; its Allow is keyed after DNAT', () => {
    const sent = t(4, '10.96.0.10', 80);
    c.packet(logged('pr|A|x', t(4, '10.65.0.3', 8081)));
    c.packet(logged('pr|A|x', t(4, '10.65.0.3', 8080)));
    c.conntrack(ct('new', 10, sent, '10.65.0.3', 8080));
    assert.equal(out[0]?.tuple.dst, '10.96.0.10');
    assert.deepEqual(out[0]?.endpoint, { address: '10.65.0.3', port: 8080 });
    assert.equal(out[0]?.decision?.policy, 'knp.default.web');
    assert.equal(out.length, 1, 'the other flow’s Allow waits for its own NEW');
  });

  it('a key that matches but a tuple that does not is no match', () => {
    c.packet({ ...logged('pr|A|x', t(7)), key: 42 });
    c.conntrack({ ...ct('new', 13, t(8)), key: 42 });
    assert.equal(out.length, 0, 'the NEW waits for its own decision');
    c.close();
    assert.deepEqual(
      out.map((o) => [o.phase, o.tuple.sport, o.decision]),
      [['start', 8, null]],
    );
  });

  it('a Deny of a packet a DNAT sent says so: its destination is the endpoint, the Service is named from it', () => {
    c.packet(logged('pr|DN|x', t(9, '10.65.0.3', 8080)));
    c.packet(logged('pr|D|x', t(10)));
    assert.deepEqual(
      out.map((o) => [o.phase, o.verdict, o.dnat, o.tuple.dst, o.tuple.dport, o.decision?.policy]),
      [
        ['denied', 'deny', true, '10.65.0.3', 8080, 'sec.block'],
        ['denied', 'deny', false, '10.65.0.3', 80, 'sec.block'],
      ],
    );
  });

  it('a Deny is a flow at once; unknown prefixes are counted; waiting decisions are bounded', () => {
    c.packet(logged('pr|D|x', t(5)));
    assert.deepEqual([out[0]?.phase, out[0]?.verdict, out[0]?.decision?.policy], ['denied', 'deny', 'sec.block']);
    c.packet(logged('pr|A|gone', t(6)));
    assert.equal(c.unknownPrefixes, 1);
    c = new FlowCorrelator(decisions, () => undefined, { now: () => now, maxPending: 50, maxLive: 50 });
    for (let i = 0; i < 1_000; i++) {
      c.packet(logged('pr|A|x', t(10_000 + i)));
      c.conntrack(ct('new', 100 + i, t(20_000 + i)));
    }
    assert.ok(c.sizes.pending <= 51 && c.sizes.live <= 50 && c.sizes.undecided <= 51, `bounded: ${JSON.stringify(c.sizes)}`);
  });

  describe('with the Allow rules numbered in the connection mark', () => {
    const CT_MARK = 0x00ff0000;
    const layout = ctMarkLayout(CT_MARK);
    const policies = (id = 'knp.default.web'): PolicyInput => ({
      sets: [],
      namedPortSets: [],
      policies: [{ id, ingress: [{ action: 'Allow', match: {} }] }],
      endpoints: [{ iface: 'cali1', addresses: ['10.65.0.3'], ingress: [{ name: 'default', policies: [id] }], egress: [] }],
      pools: [],
    });
    const number = () => ruleMarkNumber(ruleId('knp.default.web', 'ingress', 0), layout)!;
    const marked = (kind: 'new' | 'destroy', id: number, tuple: FlowTuple, mark: number): ConntrackEvent => ({
      ...ct(kind, id, tuple),
      mark,
    });

    it('a NEW names its Allow from its mark at once, and keeps nothing: its DESTROY names it again, with its start time', () => {
      c.setDecisions(decisions, decisionMarks(policies(), CT_MARK));
      const mark = number() * 2 ** layout.shift;
      c.conntrack(marked('new', 20, t(30), mark));
      assert.deepEqual(
        out.map((o) => [o.phase, o.decision?.policy, o.decision?.rule]),
        [['start', 'knp.default.web', 'ingress/0']],
        'told without waiting for a log',
      );
      assert.deepEqual(c.sizes, { pending: 0, live: 0, undecided: 0 }, 'no table holds the connection');
      c.conntrack({ ...marked('destroy', 20, t(30), mark), startMs: 900 });
      assert.deepEqual([out[1]?.phase, out[1]?.decision?.policy, out[1]?.startMs, out[1]?.bytes], ['end', 'knp.default.web', 900, 1000]);
    });

    it('no number in the mark is no policy, told at once; a staged bit waits for the staged rule’s log', () => {
      c.setDecisions(decisions, decisionMarks(policies(), CT_MARK));
      c.conntrack(marked('new', 21, t(31), 0));
      assert.deepEqual(
        out.map((o) => [o.phase, o.decision]),
        [['start', null]],
      );
      c.conntrack(marked('new', 22, t(32), number() * 2 ** layout.shift + layout.staged));
      assert.equal(out.length, 1, 'the staged rule’s log is still to come');
      c.packet(logged('pr|SD|x', t(32)));
      c.close();
      assert.deepEqual(
        out.slice(1).map((o) => [o.phase, o.decision?.policy, o.staged.map((d) => d.policy)]),
        [['start', 'knp.default.web', ['staged:sec.try']]],
      );
    });

    it('an Allow that found no number left logs: a NEW without one waits for its log', () => {
      // Two bits hold one number (and the staged bit): taken by an id numbered before this policy's.
      ruleMarkNumber('numbered before', ctMarkLayout(0x00030000));
      const m = decisionMarks(policies('knp.default.numbered-late'), 0x00030000);
      assert.equal(m.complete, false, 'the late rule has no number');
      c.setDecisions(decisions, m);
      c.conntrack(marked('new', 23, t(33), 0));
      assert.equal(out.length, 0, 'waits: its Allow may log');
      c.packet(logged('pr|A|x', t(33)));
      assert.deepEqual(
        out.map((o) => [o.phase, o.decision?.policy]),
        [['start', 'knp.default.web']],
      );
    });
  });
});

describe("felix/flows correlator and the addon's fold", () => {
  const settings = (c: FlowCorrelator, ports = { allow: false, deny: false }): number => {
    const cfg = new Float64Array(16);
    c.foldSettings(cfg, ports);
    return cfg[CFG.FLAGS]!;
  };

  it('the fold joins Allows to NEWs only while no staged rule logs, and hears of what the correlator holds', () => {
    const out: FlowObservation[] = [];
    const c = new FlowCorrelator(new Map([['pr|A|x', allow]]), (o) => out.push(o), { pendingMs: 100 });
    try {
      assert.equal(settings(c), FOLD.JOIN, 'no staged rule: the join is the fold’s');
      assert.equal(settings(c, { allow: true, deny: false }), FOLD.JOIN | FOLD.PORT_ALLOW, 'per-flow records keep the client port');
      c.packet(logged('pr|A|x', t(1)));
      assert.equal(settings(c) & FOLD.JS_PENDING, FOLD.JS_PENDING, 'a logged packet waits here: a NEW may be its');
      c.setDecisions(decisions);
      assert.equal(settings(c) & FOLD.JOIN, 0, 'a staged rule logs: the join is the correlator’s');
      const layout = ctMarkLayout(0x00ff0000);
      c.setDecisions(new Map(), { layout, byNumber: new Map(), complete: true });
      const cfg = new Float64Array(16);
      c.foldSettings(cfg, { allow: false, deny: false });
      assert.equal(cfg[CFG.FLAGS]! & FOLD.MARK, FOLD.MARK, 'mark bits name Allows');
      assert.deepEqual([cfg[CFG.NUMBER_BITS], cfg[CFG.STAGED_BIT], cfg[CFG.SHIFT], cfg[CFG.PENDING_MS]], [0x00fe0000, 0x00010000, 17, 100]);
    } finally {
      c.close();
    }
  });

  it('an aggregate is one observation of its count: its rule from a prefix or a mark number, an unknown prefix counted', () => {
    const out: FlowObservation[] = [];
    const layout = ctMarkLayout(0x00ff0000);
    const c = new FlowCorrelator(decisions, (o) => out.push(o));
    c.setDecisions(decisions, { layout, byNumber: new Map([[3, allow]]), complete: true });
    const base = { tuple: t(1), endpoint: undefined, packets: 0, bytes: 0, timeMs: 5_000, startMs: 4_000, nameKey: 9 };
    c.aggregate({ ...base, phase: 'start', count: 20, rule: 'pr|A|x' });
    c.aggregate({ ...base, phase: 'end', count: 19, rule: 3, packets: 190, bytes: 19_000 });
    c.aggregate({ ...base, phase: 'denied', count: 5, rule: 'pr|DN|x', packets: 5, bytes: 300 });
    c.aggregate({ ...base, phase: 'start', count: 2, rule: null });
    c.aggregate({ ...base, phase: 'denied', count: 4, rule: 'pr|D|gone' });
    c.close();
    assert.deepEqual(
      out.map((o) => [o.phase, o.count, o.decision?.policy ?? null, o.verdict, o.dnat, o.packets, o.startMs, o.id]),
      [
        ['start', 20, 'knp.default.web', 'allow', undefined, 0, 4_000, -1],
        ['end', 19, 'knp.default.web', 'allow', undefined, 190, 4_000, -1],
        ['denied', 5, 'sec.block', 'deny', true, 5, 4_000, -1],
        ['start', 2, null, 'allow', undefined, 0, 4_000, -1],
      ],
    );
    assert.equal(c.unknownPrefixes, 4, 'the refused packets of a rule no longer there are counted, not kept');
  });
});
