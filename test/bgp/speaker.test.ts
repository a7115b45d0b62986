// The session layer and the speaker over real TCP on loopback (127.0.0.0/8 needs no
// namespace): collisions, 100,000 prefixes checked one by one, and what a peer that sends
// bad messages or falls silent gets back, read off the wire by a raw peer built on the codec.
import assert from 'node:assert/strict';
import { BgpSpeaker, encodeMessage, type OpenMessage } from '../../index.js';
import { RawPeer } from '../support/raw-peer.js';
import { waitFor } from '../support/wait.js';

let nextPort = 20000 + (process.pid % 5000) * 4;
const port = () => nextPort++;

async function pair(a: { ip: string; asn: number }, b: { ip: string; asn: number }) {
  const pa = port();
  const pb = port();
  const sa = new BgpSpeaker({ asn: a.asn, routerId: a.ip, listen: { host: a.ip, port: pa } });
  const sb = new BgpSpeaker({ asn: b.asn, routerId: b.ip, listen: { host: b.ip, port: pb } });
  await sa.start();
  await sb.start();
  const common = { holdTime: 9, connectRetryTime: 1, idleHoldTime: 0.2 };
  sa.addPeer({ address: b.ip, asn: b.asn, port: pb, localAddress: a.ip, ...common });
  sb.addPeer({ address: a.ip, asn: a.asn, port: pa, localAddress: b.ip, ...common });
  return [sa, sb] as const;
}

const established = (s: BgpSpeaker) =>
  waitFor(() => s.peerStatus(), {
    what: 'session Established',
    until: (ps) => ps.length > 0 && ps.every((p) => p.state === 'Established'),
    timeoutMs: 15_000,
    intervalMs: 20,
  });

describe('speaker sessions over loopback', function () {
  this.timeout(60_000);
  const speakers: BgpSpeaker[] = [];
  afterEach(async () => {
    await Promise.all(speakers.splice(0).map((s) => s.stop()));
  });

  it('a mesh of 16 speakers started at once: every collision resolves, no exception, every session Established', async () => {
    // Many simultaneous collisions once dropped a connection whose buffered OPEN still ran,
    // and the peer lost its primary connection (a TypeError that took the process down).
    const n = 16;
    const p = port();
    nextPort += 1;
    const ip = (i: number) => `127.0.3.${i + 1}`;
    const mesh = Array.from({ length: n }, (_, i) => new BgpSpeaker({ asn: 64512, routerId: ip(i), listen: { host: ip(i), port: p } }));
    speakers.push(...mesh);
    await Promise.all(mesh.map((s) => s.start()));
    const errors: unknown[] = [];
    const onError = (e: unknown) => errors.push(e);
    process.on('uncaughtException', onError);
    try {
      mesh.forEach((s, i) => {
        for (let j = 0; j < n; j++)
          if (j !== i)
            s.addPeer({ address: ip(j), asn: 64512, port: p, localAddress: ip(i), holdTime: 9, connectRetryTime: 1, idleHoldTime: 0.2 });
      });
      await Promise.all(mesh.map((s) => established(s)));
      for (const s of mesh) assert.equal(s.peerStatus().filter((x) => x.state === 'Established').length, n - 1);
    } finally {
      process.off('uncaughtException', onError);
    }
    assert.deepEqual(errors, []);
  });

  it('both sides connect at once: the collision leaves one session, Established on both', async () => {
    const [a, b] = await pair({ ip: '127.0.1.1', asn: 65001 }, { ip: '127.0.1.2', asn: 65002 });
    speakers.push(a, b);
    await established(a);
    await established(b);
    assert.equal(a.peerStatus().length, 1);
    assert.equal(b.peerStatus()[0]!.routerId, '127.0.1.1');
  });

  it('100,000 prefixes go through one session and every one arrives; withdrawing them empties the peer', async () => {
    const [a, b] = await pair({ ip: '127.0.2.1', asn: 65001 }, { ip: '127.0.2.2', asn: 65002 });
    speakers.push(a, b);
    await established(b);
    const prefixes: string[] = [];
    for (let i = 0; i < 100_000; i++) prefixes.push(`100.${64 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32`);
    for (const p of prefixes) a.originate(p, { attributes: { med: 1 } });
    await waitFor(() => b.routes('ipv4-unicast').length, {
      what: '100,000 routes on the receiver',
      until: (n) => n === 100_000,
      timeoutMs: 40_000,
      intervalMs: 100,
    });
    const got = new Set(b.routes('ipv4-unicast').map((r) => r.prefix));
    for (const p of prefixes) assert.ok(got.has(p), `missing ${p}`);
    const one = b.lookup('100.65.134.159/32')!.best;
    assert.equal(one.nextHop, '127.0.2.1');
    assert.deepEqual(one.attributes.asPath, [{ type: 'sequence', asns: [65001] }]);
    for (const p of prefixes) a.withdraw(p);
    await waitFor(() => b.routes('ipv4-unicast').length, {
      what: 'every route withdrawn',
      until: (n) => n === 0,
      timeoutMs: 40_000,
      intervalMs: 100,
    });
  });
});

/** A peer written with the codec alone, so a test can send exactly the bytes it wants. */

describe('speaker against a raw peer: errors on the wire', function () {
  this.timeout(30_000);
  let speaker: BgpSpeaker;
  let peer: RawPeer | undefined;
  let p = 0;
  const SPEAKER = '127.0.3.1';
  const RAW = '127.0.3.2';

  beforeEach(async () => {
    p = port();
    speaker = new BgpSpeaker({ asn: 65001, routerId: SPEAKER, listen: { host: SPEAKER, port: p } });
    await speaker.start();
    speaker.addPeer({ address: RAW, asn: 65002, passive: true, holdTime: 3, gracefulRestart: false });
  });
  afterEach(async () => {
    peer?.destroy();
    await speaker.stop();
  });

  async function establish(holdTime = 3): Promise<RawPeer> {
    peer = await RawPeer.connect(SPEAKER, p, RAW);
    peer.open(65002, '127.0.3.2', holdTime);
    peer.send({ type: 'keepalive' });
    await waitFor(() => speaker.peerStatus()[0]!.state, {
      what: 'Established',
      until: (s) => s === 'Established',
      timeoutMs: 5000,
      intervalMs: 10,
    });
    assert.ok(
      peer.received.some((m) => m.type === 'open'),
      `the peer received no OPEN: ${peer.received.map((m) => m.type).join(', ')}`,
    );
    return peer;
  }

  const announce = (prefix: string, extra: Buffer = Buffer.alloc(0)) => {
    const m = encodeMessage({
      type: 'update',
      withdrawn: [],
      attributes: { origin: 'igp', asPath: [{ type: 'sequence', asns: [65002] }], nextHop: RAW },
      nlri: [{ prefix }],
    });
    if (extra.length === 0) return m;
    // Splice extra attribute octets in and fix both lengths.
    const attrLen = m.readUInt16BE(21);
    const out = Buffer.concat([m.subarray(0, 23 + attrLen), extra, m.subarray(23 + attrLen)]);
    out.writeUInt16BE(attrLen + extra.length, 21);
    out.writeUInt16BE(out.length, 16);
    return out;
  };

  it('a wrong peer AS in the OPEN gets 2/2 Bad Peer AS', async () => {
    peer = await RawPeer.connect(SPEAKER, p, RAW);
    peer.open(65009, '127.0.3.2');
    const n = await peer.notification();
    assert.equal(`${n.code}/${n.subcode}`, '2/2');
  });

  it('a malformed MED is treat-as-withdraw: the session stays up and the prefix is withdrawn', async () => {
    const raw = await establish();
    raw.send(announce('10.7.0.0/16'));
    await waitFor(() => speaker.lookup('10.7.0.0/16'), {
      what: 'route learned',
      until: (r) => r !== undefined,
      timeoutMs: 5000,
      intervalMs: 10,
    });
    raw.send(announce('10.7.0.0/16', Buffer.from([0x80, 4, 3, 0, 0, 1])));
    await waitFor(() => speaker.lookup('10.7.0.0/16'), {
      what: 'route withdrawn',
      until: (r) => r === undefined,
      timeoutMs: 5000,
      intervalMs: 10,
    });
    assert.equal(speaker.peerStatus()[0]!.state, 'Established');
    assert.equal(
      raw.received.some((m) => m.type === 'notification'),
      false,
    );
  });

  it('an invalid NLRI field gets 3/10 and the session closes; the routes go', async () => {
    const raw = await establish();
    raw.send(announce('10.8.0.0/16'));
    await waitFor(() => speaker.lookup('10.8.0.0/16'), {
      what: 'route learned',
      until: (r) => r !== undefined,
      timeoutMs: 5000,
      intervalMs: 10,
    });
    const bad = announce('10.9.0.0/16');
    bad[bad.length - 3] = 40; // prefix length 40
    raw.send(bad);
    const n = await raw.notification();
    assert.equal(`${n.code}/${n.subcode}`, '3/10');
    await waitFor(() => speaker.lookup('10.8.0.0/16'), {
      what: 'routes dropped',
      until: (r) => r === undefined,
      timeoutMs: 5000,
      intervalMs: 10,
    });
  });

  it('a bad marker gets 1/1', async () => {
    const raw = await establish();
    const k = encodeMessage({ type: 'keepalive' });
    k[0] = 0;
    raw.send(k);
    const n = await raw.notification();
    assert.equal(`${n.code}/${n.subcode}`, '1/1');
  });

  it('a peer that falls silent gets 4/0 Hold Timer Expired after the hold time, and its routes go', async () => {
    const raw = await establish();
    raw.send(announce('10.10.0.0/16'));
    await waitFor(() => speaker.lookup('10.10.0.0/16'), {
      what: 'route learned',
      until: (r) => r !== undefined,
      timeoutMs: 5000,
      intervalMs: 10,
    });
    const t0 = Date.now();
    const n = await raw.notification();
    assert.equal(`${n.code}/${n.subcode}`, '4/0');
    const waited = (Date.now() - t0) / 1000;
    assert.ok(waited > 1.5 && waited < 4.5, `hold timer fired after ${waited} s (hold 3 s)`);
    assert.equal(speaker.lookup('10.10.0.0/16'), undefined);
    assert.ok(raw.received.filter((m) => m.type === 'keepalive').length >= 1, 'we sent keepalives meanwhile');
  });

  it('a peer that does not read: our output stays bounded, and everything arrives once it reads', async function () {
    this.timeout(90_000);
    // A longer hold time than the other tests: this one keeps the process busy encoding 18 MB,
    // and a loaded machine must not turn that into a hold timer expiry.
    speaker.removePeer(RAW);
    speaker.addPeer({ address: RAW, asn: 65002, passive: true, holdTime: 30, gracefulRestart: false });
    const raw = await establish(30);
    raw.socket.pause();
    // 25,000 prefixes, each with its own large attribute set: ~18 MB of UPDATEs, more than the
    // kernel's socket buffers on loopback can absorb, so the rest must wait in the RIB.
    const large: [number, number, number][] = Array.from({ length: 60 }, (_, k) => [65001, k, k]);
    for (let i = 0; i < 25_000; i++)
      speaker.originate(`100.${64 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32`, { attributes: { med: i, largeCommunities: large } });
    // Keep our side of the session alive while we do not read.
    const keepalive = setInterval(() => raw.send({ type: 'keepalive' }), 500);
    try {
      // Once the kernel's buffers are full, output waits in our socket; it must stop growing there.
      let peak = await waitFor(() => speaker.peerStatus()[0]!.outputBuffered, {
        what: 'output queued in our socket',
        until: (n) => n > 0,
        timeoutMs: 15_000,
        intervalMs: 20,
      });
      for (let i = 0; i < 10; i++) {
        await new Promise((r) => setTimeout(r, 100));
        peak = Math.max(peak, speaker.peerStatus()[0]!.outputBuffered);
      }
      // 64 KiB of socket high water plus one pull of up to 64 KiB (and a message over it).
      assert.ok(peak > 0 && peak < 200 * 1024, `buffered ${peak} octets while the peer did not read`);
      raw.socket.resume();
      const announced = () => raw.received.reduce((n, m) => n + (m.type === 'update' ? m.nlri.length : 0), 0);
      await waitFor(announced, {
        what: '25,000 prefixes received once reading',
        until: (n) => n === 25_000,
        timeoutMs: 60_000,
        intervalMs: 50,
      }).catch((e: Error) => {
        const notification = raw.received.find((m) => m.type === 'notification');
        throw new Error(
          `${e.message}\nspeaker side: ${JSON.stringify(speaker.peerStatus()[0])}\nnotification received: ${JSON.stringify(notification)}`,
        );
      });
      assert.equal(speaker.peerStatus()[0]!.state, 'Established');
    } finally {
      clearInterval(keepalive);
    }
  });

  it('our OPEN offers what a peer needs to know', async () => {
    const raw = await establish();
    const open = raw.received.find((m): m is OpenMessage => m.type === 'open')!;
    assert.equal(open.holdTime, 3);
    assert.deepEqual(open.capabilities.map((c) => c.kind).sort(), [
      'enhanced-route-refresh',
      'extended-message',
      'four-octet-as',
      'multiprotocol',
      'route-refresh',
    ]);
  });
});
