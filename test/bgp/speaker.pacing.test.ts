// How long a new change waits before it goes out. A session holds UPDATEs prompted by new
// changes for a while after its last batch, so that a reflector of thousands of clients sends
// each a few large writes; a speaker with a few peers (a node agent) must not hold them: each
// new pod block would otherwise reach the other kernels up to 200 ms late.
import assert from 'node:assert/strict';
import { BgpSpeaker } from '../../index.js';
import { waitFor } from '../support/wait.js';

const base = 23000 + (process.pid % 4000) * 2;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

describe('speaker pacing: new changes and the number of sessions', function () {
  this.timeout(60_000);
  const speakers: BgpSpeaker[] = [];
  afterEach(async () => {
    await Promise.all(speakers.splice(0).map((s) => s.stop()));
  });

  it('with one peer, changes 40 ms apart each reach it at once, not batched every 200 ms', async () => {
    const a = new BgpSpeaker({ asn: 65001, routerId: '127.0.5.1', listen: { host: '127.0.5.1', port: base } });
    const b = new BgpSpeaker({ asn: 65002, routerId: '127.0.5.2', listen: { host: '127.0.5.2', port: base + 1 } });
    speakers.push(a, b);
    await a.start();
    await b.start();
    const common = { holdTime: 9, connectRetryTime: 1, idleHoldTime: 0.2 };
    a.addPeer({ address: '127.0.5.2', asn: 65002, port: base + 1, localAddress: '127.0.5.1', ...common });
    b.addPeer({ address: '127.0.5.1', asn: 65001, port: base, localAddress: '127.0.5.2', ...common });
    await waitFor(() => a.peerStatus(), {
      what: 'session Established',
      until: (ps) => ps.length === 1 && ps[0]!.state === 'Established',
      timeoutMs: 15_000,
      intervalMs: 20,
    });
    const arrived = new Map<string, number>();
    b.on('bestPaths', (changes) => {
      for (const c of changes) if (!arrived.has(c.prefix)) arrived.set(c.prefix, performance.now());
    });
    const sent = new Map<string, number>();
    for (let i = 0; i < 12; i++) {
      const prefix = `10.77.${i}.0/24`;
      sent.set(prefix, performance.now());
      a.originate(prefix);
      await new Promise((r) => setTimeout(r, 40));
    }
    await waitFor(() => arrived.size, { what: 'all 12 prefixes at the peer', until: (n) => n === 12, timeoutMs: 10_000, intervalMs: 10 });
    const delays = [...sent].map(([p, t]) => arrived.get(p)! - t);
    // Held 200 ms after each batch, changes 40 ms apart wait 100 ms on the median (and up to 200).
    assert.ok(median(delays) < 50, `median delay ${median(delays).toFixed(1)} ms: ${delays.map((d) => d.toFixed(0)).join(' ')}`);
  });
});
