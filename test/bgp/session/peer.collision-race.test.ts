// Two connections to one peer whose OPENs cross (RFC 4271 §6.8), scripted message by message
// against the speaker from a raw peer with the higher BGP Identifier, so that §6.8 alone would
// keep the peer's connection. Once we have sent our KEEPALIVE on a connection, the peer may hold
// it Established; a Cease there ends a session the peer considers up, and a helper of graceful
// restart (BIRD) then drops the stale routes it kept for us. The speaker waits for the peer to
// settle that connection instead, and a connection dialled by a graceful-restart peer while the
// session is up is a restart only if the old session proves gone.
import assert from 'node:assert/strict';
import net from 'node:net';
import { BgpSpeaker, type SessionDown } from '../../../index.js';
import { RawPeer } from '../../support/raw-peer.js';
import { sleep, waitFor } from '../../support/wait.js';

let nextPort = 36000 + (process.pid % 5000) * 2;

const X = '127.0.4.1'; // the speaker: the lower identifier
const Y = '127.0.4.2'; // the raw peer
const GR = [{ kind: 'graceful-restart' as const, restartFlags: 0, restartTime: 120, families: [{ afi: 1, safi: 1, flags: 0x80 }] }];

const types = (p: RawPeer) => p.received.map((m) => (m.type === 'notification' ? `notification ${m.code}/${m.subcode}` : m.type));

describe('speaker: crossing OPENs never end a connection the peer may hold Established', function () {
  this.timeout(30_000);
  let speaker: BgpSpeaker;
  let server: net.Server;
  let px = 0;
  const raws: RawPeer[] = [];
  const downs: SessionDown[] = [];
  let accepted: Promise<RawPeer>;

  beforeEach(async () => {
    px = nextPort++;
    const py = nextPort++;
    downs.length = 0;
    speaker = new BgpSpeaker({ asn: 65001, routerId: X, listen: { host: X, port: px }, forwardingPreserved: true });
    speaker.on('peerDown', (_, d) => downs.push(d));
    await speaker.start();
    server = net.createServer();
    accepted = new Promise((resolve) => server.once('connection', (s) => resolve(new RawPeer(s))));
    await new Promise<void>((resolve) => server.listen(py, Y, resolve));
    speaker.addPeer({ address: Y, asn: 65002, port: py, localAddress: X, holdTime: 9, connectRetryTime: 1, idleHoldTime: 0.2 });
  });
  afterEach(async () => {
    for (const r of raws.splice(0)) r.destroy();
    server.close();
    await speaker.stop();
  });

  const state = () => speaker.peerStatus()[0]?.state;

  /** Our connection (A) up to OpenConfirm on our side: we have sent our KEEPALIVE on it. */
  async function ourConnectionConfirmed(extra = GR): Promise<RawPeer> {
    const a = await accepted;
    raws.push(a);
    await a.message('open');
    a.open(65002, Y, 9, extra);
    await a.message('keepalive');
    return a;
  }

  /** The peer's own connection (B), dialled before it took ours, with its OPEN sent. */
  async function theirConnection(extra = GR): Promise<RawPeer> {
    const b = await RawPeer.connect(X, px, Y);
    raws.push(b);
    await b.message('open');
    b.open(65002, Y, 9, extra);
    return b;
  }

  it('the peer holds ours Established: its KEEPALIVE comes, and its own connection gets the Cease', async () => {
    const a = await ourConnectionConfirmed();
    const b = await theirConnection();
    await sleep(300);
    assert.deepEqual(types(a), ['open', 'keepalive'], 'nothing more on our connection while the peer settles it');
    a.send({ type: 'keepalive' });
    await waitFor(state, { what: 'Established', until: (s) => s === 'Established', timeoutMs: 5000, intervalMs: 10 });
    const n = await b.notification();
    assert.equal(`${n.code}/${n.subcode}`, '6/7', 'the peer’s connection loses the collision');
    await sleep(200);
    assert.ok(!types(a).some((t) => t.startsWith('notification')), `no Cease on the session the peer holds: ${types(a)}`);
    assert.ok(!a.closed, 'our connection stays open');
    assert.equal(state(), 'Established', 'the session is up, on our connection');
  });

  it('the peer gives ours up: its Cease there, and its own connection carries the session', async () => {
    const a = await ourConnectionConfirmed();
    const b = await theirConnection();
    // The peer resolved the collision its way (§6.8 keeps the higher identifier's connection):
    // KEEPALIVE on its own, Cease on ours. Its KEEPALIVE may well arrive first.
    b.send({ type: 'keepalive' });
    await sleep(100);
    a.send({ type: 'notification', code: 6, subcode: 7, data: Buffer.alloc(0) });
    a.socket.end();
    await waitFor(state, { what: 'Established', until: (s) => s === 'Established', timeoutMs: 5000, intervalMs: 10 });
    await b.message('keepalive');
    assert.ok(!types(b).some((t) => t.startsWith('notification')), `no NOTIFICATION on the peer’s connection: ${types(b)}`);
    assert.ok(!b.closed, 'the peer’s connection stays open');
  });

  it('a peer doing graceful restart dials while the session is up, then drops that connection: the session stays', async () => {
    const a = await ourConnectionConfirmed();
    a.send({ type: 'keepalive' });
    await waitFor(state, { what: 'Established', until: (s) => s === 'Established', timeoutMs: 5000, intervalMs: 10 });
    const keepalives = types(a).length;
    const b = await theirConnection();
    // Our probe: a KEEPALIVE on the session, which a restarted peer's kernel answers with a reset.
    await waitFor(() => types(a).length, {
      what: 'a KEEPALIVE on the session',
      until: (n) => n > keepalives,
      timeoutMs: 2000,
      intervalMs: 10,
    });
    b.send({ type: 'notification', code: 6, subcode: 7, data: Buffer.alloc(0) });
    b.socket.end();
    await sleep(500);
    assert.deepEqual(downs, [], 'the session never went down');
    assert.ok(!a.closed, 'our connection stays open');
    assert.equal(state(), 'Established');
  });

  it('a peer doing graceful restart dials while the session is up, and the old session is dead: the new connection takes over, our routes stale, not withdrawn', async () => {
    const a = await ourConnectionConfirmed();
    a.send({ type: 'keepalive' });
    await waitFor(state, { what: 'Established', until: (s) => s === 'Established', timeoutMs: 5000, intervalMs: 10 });
    // The old connection is dead but silent at the peer: it neither answers our probe nor
    // drops the new connection, so the wait runs out.
    a.socket.pause();
    const b = await theirConnection();
    b.send({ type: 'keepalive' });
    await waitFor(() => downs.length, { what: 'the old session to end', until: (n) => n > 0, timeoutMs: 6000, intervalMs: 20 });
    assert.ok(downs[0]!.gracefulRestart, `the old session ends as a restart (its routes kept stale): ${downs[0]!.message}`);
    await b.message('keepalive');
    await waitFor(state, { what: 'Established on the new connection', until: (s) => s === 'Established', timeoutMs: 5000, intervalMs: 10 });
    assert.ok(!types(b).some((t) => t.startsWith('notification')), `no NOTIFICATION on the new connection: ${types(b)}`);
  });
});

describe('speaker: our own connection parked, then failed', function () {
  this.timeout(30_000);
  const HIGH = '127.0.4.12'; // the speaker: now the higher identifier, so §6.8 keeps our connection
  const LOW = '127.0.4.11';
  let speaker: BgpSpeaker;
  let server: net.Server;
  const raws: RawPeer[] = [];

  afterEach(async () => {
    for (const r of raws.splice(0)) r.destroy();
    server.close();
    await speaker.stop();
  });

  it('a new dial after the failure is parked afresh, and carries the session once the peer drops its own', async () => {
    const px = nextPort++;
    const py = nextPort++;
    speaker = new BgpSpeaker({ asn: 65001, routerId: HIGH, listen: { host: HIGH, port: px } });
    await speaker.start();
    const dials: RawPeer[] = [];
    server = net.createServer((s) => {
      const r = new RawPeer(s);
      raws.push(r);
      // The first dial is refused with a Cease: while we wait to dial again (Idle), the peer's
      // own connection comes up beside our attempt.
      if (dials.push(r) === 1) {
        r.send({ type: 'notification', code: 6, subcode: 5, data: Buffer.alloc(0) });
        s.end();
      }
    });
    await new Promise<void>((resolve) => server.listen(py, LOW, resolve));
    // A second of IdleHold: the peer's connection has time to reach OpenConfirm before we dial again.
    speaker.addPeer({ address: LOW, asn: 65002, port: py, localAddress: HIGH, holdTime: 9, connectRetryTime: 1, idleHoldTime: 1 });
    const dial = (n: number) =>
      waitFor(() => dials[n - 1], { what: `our dial ${n}`, until: (d) => d !== undefined, timeoutMs: 10_000, intervalMs: 5 });
    await dial(1);
    await waitFor(() => speaker.peerStatus()[0]?.state, {
      what: 'Idle after the Cease',
      until: (s) => s === 'Idle',
      timeoutMs: 5000,
      intervalMs: 5,
    });
    // The peer's own connection, up to OpenConfirm on our side.
    const b = await RawPeer.connect(HIGH, px, LOW);
    raws.push(b);
    await b.message('open');
    b.open(65002, LOW, 9, GR);
    await b.message('keepalive');
    // Our next dial crosses it and is parked (our KEEPALIVE is out on the peer's connection).
    const a2 = await dial(2);
    await a2.message('open');
    a2.open(65002, LOW, 9, GR);
    await sleep(200);
    assert.deepEqual(types(a2), ['open'], 'the crossing dial is parked');
    // It fails; the next dial crosses the peer's connection again.
    a2.destroy();
    const a3 = await dial(3);
    await a3.message('open');
    a3.open(65002, LOW, 9, GR);
    await sleep(200);
    assert.deepEqual(types(a3), ['open'], 'the next dial is parked too');
    // The peer gives its own connection up: ours carries the session.
    b.send({ type: 'notification', code: 6, subcode: 7, data: Buffer.alloc(0) });
    b.socket.end();
    await a3.message('keepalive');
    a3.send({ type: 'keepalive' });
    await waitFor(() => speaker.peerStatus()[0]?.state, {
      what: 'Established',
      until: (s) => s === 'Established',
      timeoutMs: 5000,
      intervalMs: 10,
    });
    assert.ok(!types(a3).some((t) => t.startsWith('notification')), `no NOTIFICATION on our connection: ${types(a3)}`);
  });
});
