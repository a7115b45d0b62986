// drain(): RFC 8326 graceful shutdown over loopback. Two speakers originate the same prefix to a
// third; the one it prefers drains: its route comes again with GRACEFUL_SHUTDOWN, the receiver
// moves to the other path, and only then does the drained session close with a Cease.
import assert from 'node:assert/strict';
import { BgpSpeaker, GRACEFUL_SHUTDOWN } from '../../bgp/index.js';
import { waitFor } from '../support/wait.js';

let nextPort = 33000 + (process.pid % 5000) * 4;
const port = () => nextPort++;

const C = '127.0.9.41'; // the receiver
const A = '127.0.9.42'; // drained (preferred: lower router ID)
const B = '127.0.9.43'; // stays
const PREFIX = '10.6.0.0/24';

describe('speaker: drain (RFC 8326 graceful shutdown)', function () {
  this.timeout(30_000);
  const speakers: BgpSpeaker[] = [];
  afterEach(async () => {
    await Promise.all(speakers.splice(0).map((s) => s.stop()));
  });

  it('the receiver moves to the other path before the drained session closes; later originations are marked too', async () => {
    const [pc, pa, pb] = [port(), port(), port()];
    const c = new BgpSpeaker({ asn: 65000, routerId: C, listen: { host: C, port: pc } });
    const a = new BgpSpeaker({ asn: 65001, routerId: A, listen: { host: A, port: pa } });
    const b = new BgpSpeaker({ asn: 65002, routerId: B, listen: { host: B, port: pb } });
    speakers.push(c, a, b);
    await Promise.all([c.start(), a.start(), b.start()]);
    a.originate(PREFIX, { nextHop: A });
    b.originate(PREFIX, { nextHop: B });
    const common = { holdTime: 9, connectRetryTime: 1, idleHoldTime: 0.2 };
    c.addPeer({ address: A, asn: 65001, port: pa, localAddress: C, ...common });
    c.addPeer({ address: B, asn: 65002, port: pb, localAddress: C, ...common });
    a.addPeer({ address: C, asn: 65000, port: pc, localAddress: A, ...common });
    b.addPeer({ address: C, asn: 65000, port: pc, localAddress: B, ...common });
    await waitFor(() => c.lookup(PREFIX)?.paths.length, { what: 'both paths at the receiver', until: (n) => n === 2, timeoutMs: 10_000 });
    assert.equal(c.lookup(PREFIX)!.best.peer?.address, A);

    const events: string[] = [];
    c.on('bestPaths', (changes) => {
      for (const ch of changes) if (ch.prefix === PREFIX) events.push(`best ${ch.best?.peer?.address}`);
    });
    c.on('peerDown', (address, d) => events.push(`down ${address} ${d.reason.received?.code}/${d.reason.received?.subcode}`));
    const draining = a.drain({ settleMs: 300, message: 'maintenance' });
    assert.ok(a.isDraining, 'the speaker does not say it is draining');
    a.originate('10.7.0.0/24', { nextHop: A });
    await waitFor(() => c.lookup('10.7.0.0/24'), { what: 'a route originated during the drain', timeoutMs: 5_000 });
    assert.ok(c.lookup('10.7.0.0/24')!.best.attributes.communities?.includes(GRACEFUL_SHUTDOWN), 'not marked');
    await draining;
    await waitFor(() => events.some((e) => e.startsWith(`down ${A}`)), { what: 'the drained session to close', timeoutMs: 5_000 });
    assert.deepEqual(events.slice(0, 2), [`best ${B}`, `down ${A} 6/2`], `events: ${events.join(', ')}`);
    const marked = c.adjRibIn(A);
    assert.equal(marked.length, 0, 'routes of the closed session remain');
  });
});
