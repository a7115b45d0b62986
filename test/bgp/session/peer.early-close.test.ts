// A peer that closes our connection before its OPEN was not ready for us (idle after a reset,
// shut down, or keeping its own connection). RFC 4271 would wait the whole ConnectRetryTime in
// Active (120 s by default); we dial again after the IdleHold back-off, doubling while the
// peer keeps closing, so a peer that is ready a moment later has its session at once.
import assert from 'node:assert/strict';
import net from 'node:net';
import { BgpSpeaker } from '../../../index.js';
import { waitFor } from '../../support/wait.js';

describe('peer: our connection closed by the peer before its OPEN', function () {
  this.timeout(30_000);
  let speaker: BgpSpeaker;
  let server: net.Server;
  afterEach(async () => {
    server.close();
    await speaker.stop();
  });

  it('is dialled again after the IdleHold back-off (1 s, 2 s, 4 s), not the 120 s connect retry', async () => {
    const dials: number[] = [];
    server = net.createServer((s) => {
      dials.push(performance.now());
      s.on('error', () => undefined);
      s.destroy(); // accepted, then closed before any OPEN: as GoBGP does while idle after a reset
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.6.2', resolve));
    const port = (server.address() as net.AddressInfo).port;
    speaker = new BgpSpeaker({ asn: 65001, routerId: '10.0.0.1', listen: { host: '127.0.6.1', port: 0 } });
    await speaker.start();
    // Default connect retry (120 s); an IdleHold of 1 s.
    speaker.addPeer({ address: '127.0.6.2', asn: 65002, port, idleHoldTime: 1 });
    await waitFor(() => dials.length, { what: 'four dials', until: (n) => n >= 4, timeoutMs: 15_000, intervalMs: 20 });
    const gaps = dials.slice(1, 4).map((t, i) => (t - dials[i]!) / 1000);
    // Jitter (RFC 4271 §10) takes up to a quarter off each wait.
    for (const [i, want] of [1, 2, 4].entries())
      assert.ok(gaps[i]! >= want * 0.7 && gaps[i]! < want * 1.5 + 0.5, `gap ${i + 1}: ${gaps[i]!.toFixed(2)} s, not about ${want} s`);
    assert.equal(speaker.peerStatus()[0]?.state === 'Established', false, 'no session with a peer that never speaks');
  });
});
