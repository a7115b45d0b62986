// GTSM (RFC 5082) in the library, over loopback (nothing decrements a TTL there): two speakers
// with ttlSecurity come up whichever side dials; one with ttlSecurity and one without never do,
// because the GTSM side's kernel drops the other's TTL 64 segments; a bad value names the field.
import assert from 'node:assert/strict';
import { BgpSpeaker, loadTcpMd5, sessionTtl, type NeighborConfig } from '../../../bgp/index.js';
import { waitFor } from '../../support/wait.js';

let nextPort = 26000 + (process.pid % 4000) * 4;
const port = () => nextPort++;

interface Side {
  ip: string;
  asn: number;
  ttlSecurity?: number;
  passive?: boolean;
}

async function pair(a: Side, b: Side, speakers: BgpSpeaker[]) {
  const pa = port();
  const pb = port();
  const sa = new BgpSpeaker({ asn: a.asn, routerId: a.ip, listen: { host: a.ip, port: pa } });
  const sb = new BgpSpeaker({ asn: b.asn, routerId: b.ip, listen: { host: b.ip, port: pb } });
  speakers.push(sa, sb);
  await sa.start();
  await sb.start();
  const peer = (me: Side, them: Side, theirPort: number): NeighborConfig => ({
    address: them.ip,
    asn: them.asn,
    port: theirPort,
    localAddress: me.ip,
    passive: me.passive,
    ttlSecurity: me.ttlSecurity,
    holdTime: 9,
    connectRetryTime: 1,
    idleHoldTime: 0.2,
  });
  sa.addPeer(peer(a, b, pb));
  sb.addPeer(peer(b, a, pa));
  return [sa, sb] as const;
}

const state = (s: BgpSpeaker) => s.peerStatus()[0]?.state;

describe('GTSM (ttlSecurity) between speakers over loopback', function () {
  this.timeout(60_000);
  const speakers: BgpSpeaker[] = [];
  afterEach(async () => {
    await Promise.all(speakers.splice(0).map((s) => s.stop()));
  });
  before(() => {
    if (!loadTcpMd5()?.setTtl) throw new Error('the bgp/native addon is not built or too old: npm run build:native');
  });

  it('ttlSecurity: TTL 255 out, at least 256 - hops in', () => {
    assert.deepEqual(sessionTtl({ ttlSecurity: 1 }), { ttl: 255, minTtl: 255 });
    assert.deepEqual(sessionTtl({ ttlSecurity: 2 }), { ttl: 255, minTtl: 254 });
    assert.deepEqual(sessionTtl({ ttl: 3 }), { ttl: 3 });
    assert.equal(sessionTtl({}), undefined);
  });

  for (const passive of [false, true])
    it(`both sides GTSM: Established (the other side ${passive ? 'only listens' : 'dials too'})`, async () => {
      const [a, b] = await pair(
        { ip: '127.0.31.1', asn: 65001, ttlSecurity: 1 },
        { ip: '127.0.31.2', asn: 65002, ttlSecurity: 1, passive },
        speakers,
      );
      for (const s of [a, b])
        await waitFor(() => state(s), { what: 'Established', until: (x) => x === 'Established', timeoutMs: 15_000, intervalMs: 20 });
    });

  it('GTSM on one side only: the other sends TTL 64, which the GTSM side drops; never Established', async () => {
    const [a, b] = await pair({ ip: '127.0.31.3', asn: 65001, ttlSecurity: 1 }, { ip: '127.0.31.4', asn: 65002 }, speakers);
    const end = Date.now() + 4_000;
    while (Date.now() < end) {
      assert.notEqual(state(a), 'Established', 'the GTSM side came up with a TTL 64 peer');
      assert.notEqual(state(b), 'Established', 'the plain side came up with a GTSM peer it cannot reach');
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  it('a bad ttlSecurity or ttl is refused, naming the field', () => {
    const s = new BgpSpeaker({ asn: 65001, routerId: '127.0.31.5', listen: false });
    assert.throws(() => s.addPeer({ address: '127.0.31.6', asn: 65002, ttlSecurity: 255 }), /ttlSecurity: 255 is not a hop count/);
    assert.throws(() => s.addPeer({ address: '127.0.31.6', asn: 65002, ttl: 0 }), /ttl: 0 is not a TTL/);
    assert.throws(() => s.addPeer({ address: '127.0.31.6', asn: 65002, ttl: 3, ttlSecurity: 1 }), /set ttl or ttlSecurity, not both/);
  });
});
