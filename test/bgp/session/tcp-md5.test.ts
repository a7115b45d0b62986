// TCP-MD5 (RFC 2385) in the library, over loopback: two speakers with the same password come
// up, with different ones (or one without) never do, whichever side connects; a peer removed
// takes its key off the listener; and without the addon a peer with a password is refused,
// never run as a plain session.
import assert from 'node:assert/strict';
import net from 'node:net';
import { BgpSpeaker, TcpMd5UnavailableError, loadTcpMd5, setTcpMd5AddonPath, type NeighborConfig } from '../../../bgp/index.js';
import { Peer } from '../../../bgp/session/peer.js';
import { waitFor } from '../../support/wait.js';

let nextPort = 24000 + (process.pid % 4000) * 4;
const port = () => nextPort++;
const common = { holdTime: 9, connectRetryTime: 1, idleHoldTime: 0.2 };

interface Side {
  ip: string;
  asn: number;
  password?: string;
  passive?: boolean;
  routerId?: string;
}

async function pair(a: Side, b: Side, speakers: BgpSpeaker[]) {
  const pa = port();
  const pb = port();
  const sa = new BgpSpeaker({ asn: a.asn, routerId: a.routerId ?? a.ip, listen: { host: a.ip, port: pa } });
  const sb = new BgpSpeaker({ asn: b.asn, routerId: b.routerId ?? b.ip, listen: { host: b.ip, port: pb } });
  speakers.push(sa, sb);
  await sa.start();
  await sb.start();
  const peer = (me: Side, them: Side, theirPort: number): NeighborConfig => ({
    address: them.ip,
    asn: them.asn,
    port: theirPort,
    localAddress: me.ip,
    password: me.password,
    passive: me.passive,
    ...common,
  });
  sa.addPeer(peer(a, b, pb));
  sb.addPeer(peer(b, a, pa));
  return [sa, sb] as const;
}

const state = (s: BgpSpeaker) => s.peerStatus()[0]?.state;
const established = (s: BgpSpeaker) =>
  waitFor(() => state(s), { what: 'session Established', until: (x) => x === 'Established', timeoutMs: 15_000, intervalMs: 20 });

/** Neither side gets past Active for `ms`: no OPEN can arrive over a connection never made. */
async function staysDown(a: BgpSpeaker, b: BgpSpeaker, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    assert.notEqual(state(a), 'Established');
    assert.notEqual(state(b), 'Established');
    assert.ok(['Idle', 'Connect', 'Active'].includes(state(a)!), `a is ${state(a)}: no OPEN may have arrived`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('TCP-MD5 between speakers over loopback', function () {
  this.timeout(60_000);
  const speakers: BgpSpeaker[] = [];
  afterEach(async () => {
    await Promise.all(speakers.splice(0).map((s) => s.stop()));
  });

  before(() => {
    if (!loadTcpMd5()) throw new Error('the TCP-MD5 addon is not built: npm run build:native');
  });

  it('the same password both ways: Established, our outgoing SYN signed (the other side only listens)', async () => {
    const [a, b] = await pair(
      { ip: '127.0.21.1', asn: 65001, password: 's3cret' },
      { ip: '127.0.21.2', asn: 65002, password: 's3cret', passive: true },
      speakers,
    );
    await established(a);
    await established(b);
  });

  it('IPv6: different keys stay down, the same key comes up', async () => {
    const [x, y] = await pair(
      { ip: '::1', asn: 65001, password: 'v6 key', routerId: '10.0.0.1' },
      { ip: '::1', asn: 65002, password: 'other key', passive: true, routerId: '10.0.0.2' },
      speakers,
    );
    await staysDown(x, y, 2500);
    const [a, b] = await pair(
      { ip: '::1', asn: 65001, password: 'v6 key', routerId: '10.0.0.1' },
      // Both ends at ::1 cannot be told apart by address; the other side listens on a
      // different port and only accepts, so this checks the IPv6 key on both sockets.
      { ip: '::1', asn: 65002, password: 'v6 key', passive: true, routerId: '10.0.0.2' },
      speakers,
    );
    await established(b);
    await established(a);
  });

  it('different passwords: the kernel drops every segment, no session either way', async () => {
    const [a, b] = await pair(
      { ip: '127.0.22.1', asn: 65001, password: 'one' },
      { ip: '127.0.22.2', asn: 65002, password: 'two' },
      speakers,
    );
    await staysDown(a, b, 4000);
    assert.equal(a.peerStatus()[0]!.messagesIn, 0);
  });

  it('a password on one side only: no session (an unsigned SYN to a keyed listener is dropped)', async () => {
    const [a, b] = await pair({ ip: '127.0.23.1', asn: 65001, password: 'only-here' }, { ip: '127.0.23.2', asn: 65002 }, speakers);
    await staysDown(a, b, 4000);
  });

  it('a dynamic-neighbour range keys the listener for the whole prefix (v4-mapped on a dual-stack listener)', async () => {
    const p = port();
    // No host: node listens on :: for IPv4 and IPv6, so the range's key is the mapped prefix.
    const rr = new BgpSpeaker({ asn: 65001, routerId: '127.0.27.1', listen: p });
    speakers.push(rr);
    await rr.start();
    rr.addDynamicNeighbors({ range: '127.0.27.0/24', asn: 65002, password: 'range-key', ...common });
    const dial = (ip: string, password: string) => {
      const s = new BgpSpeaker({ asn: 65002, routerId: ip, listen: false });
      speakers.push(s);
      s.addPeer({ address: '127.0.27.1', asn: 65001, port: p, localAddress: ip, password, ...common });
      return s;
    };
    const good = dial('127.0.27.2', 'range-key');
    const bad = dial('127.0.27.3', 'wrong-key');
    await established(good);
    await staysDown(bad, bad, 2500);
    assert.deepEqual(
      rr.peerStatus().map((x) => [x.address, x.state]),
      [['127.0.27.2', 'Established']],
      'only the keyed member of the range got in',
    );
  });

  it('a removed peer takes its key off the listener: a plain connection from its address is accepted again', async () => {
    const p = port();
    const s = new BgpSpeaker({ asn: 65001, routerId: '127.0.24.1', listen: { host: '127.0.24.1', port: p } });
    speakers.push(s);
    await s.start();
    s.addPeer({ address: '127.0.24.2', asn: 65002, password: 'k', passive: true, ...common });
    const plain = () =>
      new Promise<boolean>((resolve) => {
        const c = net.connect({ host: '127.0.24.1', port: p, localAddress: '127.0.24.2', timeout: 1500 });
        c.once('connect', () => {
          c.destroy();
          resolve(true);
        });
        c.once('timeout', () => {
          c.destroy();
          resolve(false);
        });
        c.once('error', () => resolve(false));
      });
    assert.equal(await plain(), false, 'an unsigned SYN from a keyed address must get no answer');
    s.removePeer('127.0.24.2');
    assert.equal(await plain(), true, 'once the peer is gone its key is gone');
  });
});

describe('TCP-MD5 without the addon', () => {
  afterEach(() => setTcpMd5AddonPath(undefined));

  it('a peer with a password is refused with the reason; a peer without one still starts', async () => {
    setTcpMd5AddonPath('/nonexistent/tcp_md5.node');
    const s = new BgpSpeaker({ asn: 65001, routerId: '127.0.25.1', listen: false });
    try {
      assert.throws(
        () => s.addPeer({ address: '127.0.25.2', asn: 65002, password: 'k' }),
        (e: Error) =>
          e instanceof TcpMd5UnavailableError &&
          /peer 127\.0\.25\.2 password: the TCP-MD5 addon is not available at \/nonexistent\/tcp_md5\.node/.test(e.message) &&
          /npm run build:native/.test(e.message) &&
          /not started without TCP-MD5/.test(e.message),
      );
      assert.deepEqual(s.peerStatus(), [], 'nothing of the refused peer remains');
      assert.throws(
        () => new Peer({ address: '127.0.25.3', asn: 65002, password: 'k' }, { asn: 65001, routerId: '127.0.25.1' }),
        TcpMd5UnavailableError,
      );
      assert.throws(() => s.addDynamicNeighbors({ range: '127.0.26.0/24', asn: 65002, password: 'k' }), TcpMd5UnavailableError);
      s.addPeer({ address: '127.0.25.4', asn: 65002, passive: true });
      assert.equal(s.peerStatus().length, 1);
    } finally {
      await s.stop();
    }
  });

  it('a password the kernel cannot take is refused by the config check, addon or not', () => {
    const s = new BgpSpeaker({ asn: 65001, routerId: '127.0.25.1', listen: false });
    assert.throws(
      () => s.addPeer({ address: '127.0.25.5', asn: 65002, password: 'x'.repeat(81) }),
      /password: 81 octets \(TCP-MD5 keys are at most 80\)/,
    );
    assert.throws(() => s.addPeer({ address: '127.0.25.5', asn: 65002, password: '' }), /password: a non-empty string/);
  });
});
