// setPolicies(): a peer's import and export policies change while its session stays up. Export:
// the peer gets what the new policy sends and loses what it refuses, at once. Import: the peer
// is asked to send its routes again (route refresh) and they go through the new policy.
import assert from 'node:assert/strict';
import { BgpSpeaker, type Policy } from '../../bgp/index.js';
import { waitFor } from '../support/wait.js';

let nextPort = 34000 + (process.pid % 5000) * 4;
const port = () => nextPort++;

const A = '127.0.9.51';
const B = '127.0.9.52';
const PREFIXES = ['10.1.0.0/24', '10.2.0.0/24', '10.3.0.0/24'];
const common = { holdTime: 9, connectRetryTime: 1, idleHoldTime: 0.2 };
const refuse =
  (prefix: string): Policy =>
  (r) =>
    r.prefix !== prefix;

describe('speaker: policies changed on a running session', function () {
  this.timeout(30_000);
  const speakers: BgpSpeaker[] = [];
  afterEach(async () => {
    await Promise.all(speakers.splice(0).map((s) => s.stop()));
  });

  async function pair(): Promise<{ a: BgpSpeaker; b: BgpSpeaker; downs: string[] }> {
    const [pa, pb] = [port(), port()];
    const a = new BgpSpeaker({ asn: 65001, routerId: A, listen: { host: A, port: pa } });
    const b = new BgpSpeaker({ asn: 65002, routerId: B, listen: { host: B, port: pb } });
    speakers.push(a, b);
    await Promise.all([a.start(), b.start()]);
    for (const p of PREFIXES) a.originate(p, { nextHop: A });
    a.addPeer({ address: B, asn: 65002, port: pb, localAddress: A, ...common });
    b.addPeer({ address: A, asn: 65001, port: pa, localAddress: B, ...common });
    const downs: string[] = [];
    a.on('peerDown', (p) => downs.push(`a ${p}`));
    b.on('peerDown', (p) => downs.push(`b ${p}`));
    await waitFor(() => b.adjRibIn(A).length, { what: 'the three routes at B', until: (n) => n === 3, timeoutMs: 10_000 });
    return { a, b, downs };
  }
  const learned = (b: BgpSpeaker) =>
    b
      .adjRibIn(A)
      .map((r) => r.prefix)
      .sort();

  it('an export policy withdraws what it refuses at once, and a policy removed sends it again', async () => {
    const { a, b, downs } = await pair();
    a.setPolicies(B, { exportPolicy: refuse('10.2.0.0/24') });
    await waitFor(() => learned(b).join(), { what: '10.2.0.0/24 withdrawn', until: (s) => !s.includes('10.2.0.0'), timeoutMs: 5_000 });
    assert.deepEqual(learned(b), ['10.1.0.0/24', '10.3.0.0/24'], 'the others stay');
    a.originate('10.4.0.0/24', { nextHop: A });
    a.originate('10.2.0.0/24', { nextHop: A, attributes: { med: 5 } });
    await waitFor(() => learned(b).length, { what: 'a new route under the policy', until: (n) => n === 3, timeoutMs: 5_000 });
    assert.deepEqual(learned(b), ['10.1.0.0/24', '10.3.0.0/24', '10.4.0.0/24'], 'a route the policy refuses stays out when it changes');
    a.setPolicies(B, { exportPolicy: undefined });
    await waitFor(() => learned(b).length, { what: '10.2.0.0/24 back', until: (n) => n === 4, timeoutMs: 5_000 });
    assert.equal(b.lookup('10.2.0.0/24')?.best.attributes.med, 5, 'sent as it is now');
    assert.deepEqual(downs, [], 'no session went down');
  });

  it('an import policy takes effect through a route refresh, both ways', async () => {
    const { b, downs } = await pair();
    b.setPolicies(A, { importPolicy: refuse('10.3.0.0/24') });
    await waitFor(() => learned(b).join(), { what: '10.3.0.0/24 dropped', until: (s) => !s.includes('10.3.0.0'), timeoutMs: 5_000 });
    assert.deepEqual(learned(b), ['10.1.0.0/24', '10.2.0.0/24'], 'the others stay');
    assert.equal(b.lookup('10.3.0.0/24'), undefined, 'not in the Loc-RIB either');
    b.setPolicies(A, { importPolicy: undefined });
    await waitFor(() => learned(b).length, { what: '10.3.0.0/24 back', until: (n) => n === 3, timeoutMs: 5_000 });
    assert.deepEqual(downs, [], 'no session went down');
  });

  it('a policy that does not compile changes nothing', async () => {
    const { a, b } = await pair();
    assert.throws(() => a.setPolicies(B, { exportPolicy: { terms: [{ action: 'drop' as 'reject' }] } }), /action/);
    a.originate('10.5.0.0/24', { nextHop: A });
    await waitFor(() => learned(b).length, { what: 'routes still flowing', until: (n) => n === 4, timeoutMs: 5_000 });
  });
});

describe('speaker: a peer with its own local AS (localAs)', function () {
  this.timeout(30_000);
  const speakers: BgpSpeaker[] = [];
  afterEach(async () => {
    await Promise.all(speakers.splice(0).map((s) => s.stop()));
  });

  it('the session uses that AS: in the OPEN, as the AS prepended, to tell eBGP from iBGP, and to find loops', async () => {
    const [pa, pb, pc] = [port(), port(), port()];
    const C = '127.0.9.53';
    const a = new BgpSpeaker({ asn: 65001, routerId: A, listen: { host: A, port: pa } });
    const b = new BgpSpeaker({ asn: 65100, routerId: B, listen: { host: B, port: pb } });
    const c = new BgpSpeaker({ asn: 65010, routerId: C, listen: { host: C, port: pc } });
    speakers.push(a, b, c);
    await Promise.all([a.start(), b.start(), c.start()]);
    a.originate('10.8.0.0/24', { nextHop: A });
    // B knows A as AS 65010; C shares A's AS 65010 on its session, so it is iBGP there.
    a.addPeer({ address: B, asn: 65100, port: pb, localAddress: A, localAs: 65010, ...common });
    a.addPeer({ address: C, asn: 65010, port: pc, localAddress: A, localAs: 65010, ...common });
    b.addPeer({ address: A, asn: 65010, port: pa, localAddress: B, ...common });
    c.addPeer({ address: A, asn: 65010, port: pa, localAddress: C, ...common });
    await waitFor(() => b.lookup('10.8.0.0/24') && c.lookup('10.8.0.0/24'), { what: 'the route at B and C', timeoutMs: 10_000 });
    assert.deepEqual(
      b.lookup('10.8.0.0/24')!.best.attributes.asPath,
      [{ type: 'sequence', asns: [65010] }],
      'B sees the local AS prepended',
    );
    assert.deepEqual(c.lookup('10.8.0.0/24')!.best.attributes.asPath ?? [], [], 'C gets it over iBGP: nothing prepended');
    assert.equal(c.lookup('10.8.0.0/24')!.best.attributes.localPref, 100, 'iBGP carries LOCAL_PREF');
    const types = Object.fromEntries(a.peerStatus().map((p) => [p.address, p.type]));
    assert.deepEqual(types, { [B]: 'ebgp', [C]: 'ibgp' });
    assert.throws(() => a.addPeer({ address: '127.0.9.54', asn: 65100, localAs: 0 }), /localAs/);
    // A path through the session's own AS is a loop there, as with the speaker's AS.
    b.originate('10.9.0.0/24', { nextHop: B, attributes: { asPath: [{ type: 'sequence', asns: [65010] }] } });
    b.originate('10.10.0.0/24', { nextHop: B });
    await waitFor(() => a.lookup('10.10.0.0/24'), { what: "B's route at A", timeoutMs: 10_000 });
    assert.equal(a.lookup('10.9.0.0/24'), undefined, 'a path holding the local AS was taken');
  });
});
