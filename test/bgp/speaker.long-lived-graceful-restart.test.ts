// Long-lived graceful restart (RFC 9494) between speakers over loopback: the capability in the
// OPEN, and our speaker as the helper of a peer that stops without a NOTIFICATION (as a kill
// would): its routes stay for its restart time, then, marked LLGR_STALE and least preferred, for
// its long-lived stale time; NO_LLGR ones go when that period begins; a restart time of 0 starts
// it at once; a peer without the capability, or a helper that does not do LLGR, keeps the
// RFC 4724 behaviour.
import assert from 'node:assert/strict';
import { BgpSpeaker, LLGR_STALE, NO_LLGR, type SessionInfo } from '../../bgp/index.js';
import { sleep, waitFor } from '../support/wait.js';

let nextPort = 32000 + (process.pid % 5000) * 4;
const port = () => nextPort++;

const H = '127.0.9.31'; // our speaker, the helper
const R = '127.0.9.32'; // the one that goes away
const O = '127.0.9.33'; // another path to the same prefix

const PREFIX = '10.3.0.0/24';
const NO_LLGR_PREFIX = '10.4.0.0/24';

describe('speaker: long-lived graceful restart', function () {
  this.timeout(30_000);
  const speakers: BgpSpeaker[] = [];
  afterEach(async () => {
    await Promise.all(speakers.splice(0).map((s) => s.stop()));
  });

  const common = { holdTime: 9, connectRetryTime: 1, idleHoldTime: 0.2 };

  async function setup(o: { restartTime: number; staleTime: number; helperLlgr?: boolean; other?: boolean }) {
    const ph = port();
    const pr = port();
    const po = port();
    const helper = new BgpSpeaker({ asn: 65001, routerId: H, listen: { host: H, port: ph } });
    const leaving = new BgpSpeaker({ asn: 65002, routerId: R, listen: { host: R, port: pr }, restartTime: o.restartTime });
    // The leaving speaker too: a test that never stops it would leave its listener holding the run.
    speakers.push(helper, leaving);
    await helper.start();
    await leaving.start();
    leaving.originate(PREFIX, { nextHop: R, attributes: { localPref: 300 } });
    leaving.originate(NO_LLGR_PREFIX, { nextHop: R, attributes: { communities: [NO_LLGR] } });
    const seen: SessionInfo[] = [];
    helper.on('peerUp', (address, info) => {
      if (address === R) seen.push(info);
    });
    helper.addPeer({
      address: R,
      asn: 65002,
      port: pr,
      localAddress: H,
      ...common,
      ...(o.helperLlgr === false ? {} : { longLivedGracefulRestart: true }),
    });
    leaving.addPeer({
      address: H,
      asn: 65001,
      port: ph,
      localAddress: R,
      ...common,
      longLivedGracefulRestart: { staleTime: o.staleTime },
    });
    if (o.other) {
      const other = new BgpSpeaker({ asn: 65003, routerId: O, listen: { host: O, port: po } });
      speakers.push(other);
      await other.start();
      // A longer AS_PATH: the helper prefers the leaving peer's path while it is not LLGR_STALE.
      other.originate(PREFIX, { nextHop: O, attributes: { asPath: [{ type: 'sequence', asns: [65003, 65003] }] } });
      helper.addPeer({ address: O, asn: 65003, port: po, localAddress: H, ...common });
      other.addPeer({ address: H, asn: 65001, port: ph, localAddress: O, ...common });
      await waitFor(() => helper.lookup(PREFIX)?.paths.length, {
        what: 'both paths at the helper',
        until: (n) => n === 2,
        timeoutMs: 10_000,
      });
    }
    await waitFor(() => helper.lookup(NO_LLGR_PREFIX), { what: 'the routes at the helper', timeoutMs: 10_000 });
    assert.equal(helper.lookup(PREFIX)!.best.peer?.address, R);
    return { helper, leaving, seen };
  }

  const fromR = (s: BgpSpeaker) => s.lookup(PREFIX)?.paths.find((p) => p.peer?.address === R);

  it('our OPEN carries the long-lived graceful restart capability: each family, the F bit and the stale time', async () => {
    const { seen } = await setup({ restartTime: 30, staleTime: 7 });
    assert.deepEqual(seen[0]!.longLivedGracefulRestart, {
      families: [{ family: 'ipv4-unicast', forwardingPreserved: false, staleTime: 7 }],
    });
    const cap = seen[0]!.remoteOpen.capabilities.find((c) => c.kind === 'long-lived-graceful-restart');
    assert.deepEqual(cap, { kind: 'long-lived-graceful-restart', families: [{ afi: 1, safi: 1, flags: 0, staleTime: 7 }] });
  });

  it('past the restart time the routes stay, LLGR_STALE and least preferred; NO_LLGR ones go; all go after the stale time', async () => {
    const { helper, leaving } = await setup({ restartTime: 1, staleTime: 2, other: true });
    await leaving.stop('killed', { graceful: true });
    const down = performance.now();
    await waitFor(() => fromR(helper)?.stale, {
      what: 'the route kept as stale',
      until: (s) => s === true,
      timeoutMs: 5_000,
      intervalMs: 20,
    });
    assert.equal(helper.lookup(PREFIX)!.best.peer?.address, R, 'during the restart time a stale route keeps its rank');
    assert.ok(helper.lookup(NO_LLGR_PREFIX), 'a NO_LLGR route is kept through the restart time');
    await waitFor(() => helper.lookup(PREFIX)!.best.peer?.address, {
      what: 'the other path to win',
      until: (a) => a === O,
      timeoutMs: 5_000,
      intervalMs: 20,
    });
    const llgrAt = (performance.now() - down) / 1000;
    assert.ok(llgrAt >= 0.9, `the long-lived period began after ${llgrAt.toFixed(2)} s, before the 1 s restart time`);
    const stale = fromR(helper)!;
    assert.ok(stale.attributes.communities?.includes(LLGR_STALE), 'the kept route is not marked LLGR_STALE');
    assert.equal(stale.stale, true);
    assert.equal(helper.lookup(NO_LLGR_PREFIX), undefined, 'the NO_LLGR route is still there');
    await waitFor(() => fromR(helper), { what: 'the stale route to go', until: (r) => r === undefined, timeoutMs: 6_000, intervalMs: 50 });
    const goneAt = (performance.now() - down) / 1000;
    assert.ok(goneAt >= 2.9, `gone after ${goneAt.toFixed(2)} s, before restart time + stale time (3 s)`);
    assert.equal(helper.lookup(PREFIX)!.best.peer?.address, O);
  });

  it('a restart time of 0 starts the long-lived period at once', async () => {
    const { helper, leaving } = await setup({ restartTime: 0, staleTime: 5 });
    await leaving.stop('killed', { graceful: true });
    await waitFor(() => fromR(helper)?.attributes.communities, {
      what: 'the route marked LLGR_STALE',
      until: (c) => c?.includes(LLGR_STALE) === true,
      timeoutMs: 3_000,
      intervalMs: 20,
    });
    assert.equal(helper.lookup(NO_LLGR_PREFIX), undefined);
  });

  it('a helper that does not do long-lived graceful restart drops the routes when the restart time ends', async () => {
    const { helper, leaving } = await setup({ restartTime: 1, staleTime: 60, helperLlgr: false });
    await leaving.stop('killed', { graceful: true });
    await waitFor(() => fromR(helper)?.stale, {
      what: 'the route kept as stale',
      until: (s) => s === true,
      timeoutMs: 5_000,
      intervalMs: 20,
    });
    await waitFor(() => fromR(helper), { what: 'the route to go', until: (r) => r === undefined, timeoutMs: 5_000, intervalMs: 50 });
  });

  it('the routes come back fresh when the peer returns within the stale time', async () => {
    const { helper, leaving } = await setup({ restartTime: 0, staleTime: 60 });
    const pr = (leaving as unknown as { options: { listen: { port: number } } }).options.listen.port;
    await leaving.stop('killed', { graceful: true });
    await waitFor(() => fromR(helper)?.attributes.communities, {
      what: 'LLGR_STALE',
      until: (c) => c?.includes(LLGR_STALE) === true,
      timeoutMs: 3_000,
    });
    const back = new BgpSpeaker({ asn: 65002, routerId: R, listen: { host: R, port: pr }, forwardingPreserved: true, restarting: true });
    speakers.push(back);
    await back.start();
    back.originate(PREFIX, { nextHop: R });
    back.addPeer({ address: H, asn: 65001, port: helperPort(helper), localAddress: R, ...common, longLivedGracefulRestart: true });
    await waitFor(() => fromR(helper), {
      what: 'the route sent again, without LLGR_STALE',
      until: (r) => r !== undefined && !r.stale && r.attributes.communities === undefined,
      timeoutMs: 10_000,
    });
    await sleep(200);
    assert.equal(helper.lookup(NO_LLGR_PREFIX), undefined);
  });
});

function helperPort(s: BgpSpeaker): number {
  return (s as unknown as { options: { listen: { port: number } } }).options.listen.port;
}
