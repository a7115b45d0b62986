// A peer held down for its prefix limit: a connection from it is reset as soon as it is
// accepted (an RST, the peer's read fails with ECONNRESET), before a byte of OPEN, instead of
// closed with a FIN that left the peer to send its OPEN into a dead connection.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { BgpSpeaker } from '../../index.js';
import { waitFor } from '../support/wait.js';

let nextPort = 30000 + (process.pid % 4000) * 2;

describe('speaker: the connections of a peer held down', function () {
  this.timeout(30_000);
  const speakers: BgpSpeaker[] = [];
  after(async () => {
    await Promise.all(speakers.map((s) => s.stop()));
  });

  it('are reset at once, before any OPEN', async () => {
    const [ipA, ipB] = ['127.0.34.1', '127.0.34.2'];
    const [pa, pb] = [nextPort++, nextPort++];
    const a = new BgpSpeaker({ asn: 65001, routerId: ipA, listen: { host: ipA, port: pa } });
    const b = new BgpSpeaker({ asn: 65002, routerId: ipB, listen: { host: ipB, port: pb } });
    speakers.push(a, b);
    await a.start();
    await b.start();
    const common = { holdTime: 9, connectRetryTime: 1, idleHoldTime: 0.2, gracefulRestart: false };
    a.addPeer({ address: ipB, asn: 65002, port: pb, localAddress: ipA, ...common });
    b.addPeer({ address: ipA, asn: 65001, port: pa, localAddress: ipB, ...common, maxPrefixes: { 'ipv4-unicast': { limit: 1 } } });
    a.originate('10.78.0.0/24');
    a.originate('10.78.1.0/24');
    await waitFor(() => b.peerStatus()[0]!.maxPrefixes?.heldDown, {
      what: 'b holds a down',
      until: (h) => h !== undefined,
      timeoutMs: 20_000,
    });

    const seen = await new Promise<{ bytes: number; error?: string; ended: boolean }>((resolve) => {
      const s = connect({ host: ipB, port: pb, localAddress: ipA });
      const r = { bytes: 0, error: undefined as string | undefined, ended: false };
      s.on('data', (d) => (r.bytes += d.length));
      s.on('end', () => (r.ended = true));
      s.on('error', (e: NodeJS.ErrnoException) => (r.error = e.code));
      s.on('close', () => resolve(r));
      setTimeout(() => s.destroy(), 5000).unref();
    });
    assert.deepEqual(seen, { bytes: 0, error: 'ECONNRESET', ended: false }, 'reset, with no OPEN and no FIN first');
    assert.equal(b.peerStatus()[0]!.state, 'Idle');
  });
});
