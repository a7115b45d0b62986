// BGP with BFD (RFC 5882) between two speakers on loopback: a path BFD declares down ends the
// Established session at once with Cease 6/10 (RFC 9384) and the routes go; a remote that
// takes BFD down administratively leaves the session alone (§3.2); the status shows BFD. The
// BFD thread's death is a Down as any other, said so, and a new thread brings BFD back.
import assert from 'node:assert/strict';
import { Bfd, BfdWorker, BgpSpeaker, type BfdEndpoint } from '../../index.js';
import { freePort } from '../../bgp/session/free-port.js';
import { waitFor } from '../support/wait.js';

let nextPort = 34000 + (process.pid % 3000) * 2;

describe('speaker: BFD (RFC 5882)', function () {
  this.timeout(30_000);
  const speakers: BgpSpeaker[] = [];
  const endpoints: BfdEndpoint[] = [];
  afterEach(async () => {
    await Promise.all(speakers.splice(0).map((s) => s.stop()));
    await Promise.all(endpoints.splice(0).map((b) => b.close()));
  });

  /** `ownA`: a's endpoint, made by the test; by default a makes its own. */
  /** `aMultiplier`: what a's BFD asks of b (b's detection time is it × 100 ms). */
  async function pair(third: number, ownA?: (port: number, remotePort: number) => BfdEndpoint, aMultiplier = 3) {
    const [ipA, ipB] = [`127.0.${third}.1`, `127.0.${third}.2`];
    const [pa, pb] = [nextPort++, nextPort++];
    const [fa, fb] = [await freePort(), await freePort()];
    const bfdB = new Bfd({ port: fb, remotePort: fa });
    endpoints.push(bfdB);
    const bfdA = ownA?.(fa, fb);
    if (bfdA) endpoints.push(bfdA);
    const a = new BgpSpeaker({ asn: 65001, routerId: ipA, listen: { host: ipA, port: pa }, bfd: bfdA ?? { port: fa, remotePort: fb } });
    const b = new BgpSpeaker({ asn: 65002, routerId: ipB, listen: { host: ipB, port: pb }, bfd: bfdB });
    speakers.push(a, b);
    await a.start();
    await b.start();
    const common = {
      holdTime: 90,
      connectRetryTime: 1,
      idleHoldTime: 0.2,
      gracefulRestart: false,
      bfd: { minTxInterval: 100, minRxInterval: 100, multiplier: 3 },
    };
    a.addPeer({ address: ipB, asn: 65002, port: pb, localAddress: ipA, ...common, bfd: { ...common.bfd, multiplier: aMultiplier } });
    b.addPeer({ address: ipA, asn: 65001, port: pa, localAddress: ipB, ...common });
    b.originate('10.79.0.0/24');
    await waitFor(() => a.lookup('10.79.0.0/24') !== undefined && a.peerStatus()[0]!.bfd?.state === 'Up', {
      what: "a learns b's route, BFD Up",
      timeoutMs: 15_000,
      intervalMs: 20,
    });
    return { a, b, bfdB, ipA, ipB };
  }

  it('§4.1: a BFD Down ends the Established session within the detection time, Cease 6/10, and the routes go', async () => {
    const { a, b, bfdB } = await pair(35);
    // Up can come before the remote's Poll announcing 100 ms (the slow start's 1 s is still in effect).
    await waitFor(() => a.peerStatus()[0]!.bfd!.detectionTime, {
      what: 'detection 3 × 100 ms',
      until: (v) => v === 300,
      timeoutMs: 3000,
      intervalMs: 10,
    });
    const bDown = new Promise<number | undefined>((resolve) => b.once('peerDown', (_p, d) => resolve(d.reason.received?.subcode)));
    const aDown = new Promise<[number, string]>((resolve) => a.once('peerDown', (_p, d) => resolve([performance.now(), d.message])));
    // b's BFD falls silent, as a path that drops packets: no AdminDown, nothing.
    const silent = performance.now();
    for (const s of bfdB.sessions) s.dispose();
    const [at, message] = await aDown;
    assert.ok(at - silent < 500, `session down ${(at - silent).toFixed(0)} ms after the path went silent (detection 300 ms)`);
    assert.match(message, /BFD down: control detection time expired/);
    assert.equal(a.lookup('10.79.0.0/24'), undefined, "b's route left a's RIB with the session");
    assert.equal(await bDown, 10, 'b was told Cease 6/10 (BFD Down)');
  });

  it('§3.2: a remote that takes BFD down administratively does not end the session', async () => {
    const { a, bfdB } = await pair(36);
    let downs = 0;
    a.on('peerDown', () => downs++);
    const seen: string[] = [];
    a.on('bfdState', (_p, to, from) => seen.push(`${from}>${to}`));
    for (const s of bfdB.sessions) s.adminDown();
    await waitFor(() => a.peerStatus()[0]!.bfd?.state, {
      what: "a's BFD Down",
      until: (v) => v === 'Down',
      timeoutMs: 3000,
      intervalMs: 10,
    });
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(seen, ['Up>Down'], 'BFD went down');
    assert.equal(downs, 0, 'the BGP session stayed up');
    assert.equal(a.peerStatus()[0]!.state, 'Established');
    assert.ok(a.lookup('10.79.0.0/24'), 'and its routes');
  });

  it("the BFD thread's death is reported: a's sessions read Down, BGP ends as on any BFD Down, and a new thread brings BFD back", async () => {
    let bfdA: BfdWorker | undefined;
    // b's detection time 5 s: its BFD does not end the session first, a's own has to.
    const { a } = await pair(
      38,
      (port, remotePort) => {
        bfdA = new BfdWorker({ port, remotePort });
        return bfdA;
      },
      50,
    );
    const errors: string[] = [];
    bfdA!.on('error', (e) => errors.push(e.message));
    const aDown = new Promise<string>((resolve) => a.once('peerDown', (_p, d) => resolve(d.message)));
    await bfdA!.worker!.terminate();
    assert.match(await aDown, /BFD down: the BFD thread stopped/, 'the BGP session ended, saying why');
    assert.match(
      errors.join('; '),
      /the BFD thread stopped \(exit code 1\); its sessions \(1\) read Down until a new thread runs them, (in 1 s|starting now)/,
    );
    assert.equal(a.peerStatus()[0]!.bfd?.diagnostic, 'the BFD thread stopped', 'the status says it too');
    await waitFor(() => a.peerStatus()[0]!, {
      what: 'BFD Up again on a new thread, and the session Established',
      until: (p) => p.bfd?.state === 'Up' && p.state === 'Established',
      timeoutMs: 20_000,
      intervalMs: 50,
    });
    assert.equal(a.peerStatus()[0]!.bfd?.upCount, 2, 'Up once on each thread');
  });

  it('checks the bfd field of a peer, naming it', () => {
    const s = new BgpSpeaker({ asn: 65001, routerId: '127.0.37.1', listen: false });
    assert.throws(
      () => s.addPeer({ address: '127.0.37.2', asn: 65002, bfd: { multiplier: 0 } }),
      /peer 127\.0\.37\.2 bfd\.multiplier: 0 is not 1\.\.255/,
    );
    assert.throws(
      () => s.addPeer({ address: '127.0.37.2', asn: 65002, bfd: { minTxInterval: 0 } }),
      /peer 127\.0\.37\.2 bfd\.minTxInterval: 0 is not an interval/,
    );
    assert.throws(() => s.addPeer({ address: '127.0.37.2', asn: 65002, bfd: { interval: 5 } as never }), /bfd\.interval: unknown field/);
    assert.equal(s.peerStatus().length, 0, 'nothing added');
  });
});
