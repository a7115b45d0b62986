// The restarting side of graceful restart (RFC 4724 §4.1), two speakers over loopback: after a
// restart our OPEN carries R=1 and F=1, what we send is held back until the peers' End-of-RIBs
// are in (a configured peer not up yet is waited for until the selection deferral timer), and
// once the restart is over the next OPEN carries R=0.
import assert from 'node:assert/strict';
import { BgpSpeaker, type SessionInfo } from '../../bgp/index.js';
import { sleep, waitFor } from '../support/wait.js';

let nextPort = 30000 + (process.pid % 5000) * 4;
const port = () => nextPort++;

const H = '127.0.9.1'; // the helper
const R = '127.0.9.2'; // the speaker that restarted
const ABSENT = '127.0.9.3'; // configured, never up

describe('speaker: the restarting side of graceful restart', function () {
  this.timeout(30_000);
  const speakers: BgpSpeaker[] = [];
  afterEach(async () => {
    await Promise.all(speakers.splice(0).map((s) => s.stop()));
  });

  async function setup(options: { selectDeferTime: number; absentPeer: boolean }) {
    const ph = port();
    const pr = port();
    const helper = new BgpSpeaker({ asn: 65001, routerId: H, listen: { host: H, port: ph } });
    const restarted = new BgpSpeaker({
      asn: 65002,
      routerId: R,
      listen: { host: R, port: pr },
      restarting: true,
      forwardingPreserved: true,
      restartTime: 90,
      selectDeferTime: options.selectDeferTime,
    });
    speakers.push(helper, restarted);
    await helper.start();
    await restarted.start();
    helper.originate('10.1.0.0/24', { nextHop: H });
    restarted.originate('10.2.0.0/24', { nextHop: R });
    const seen: SessionInfo[] = [];
    helper.on('peerUp', (_, info) => seen.push(info));
    const helperEndOfRib = { at: 0 };
    restarted.on('endOfRib', () => {
      helperEndOfRib.at ||= performance.now();
    });
    const common = { holdTime: 9, connectRetryTime: 1, idleHoldTime: 0.2 };
    helper.addPeer({ address: R, asn: 65002, port: pr, localAddress: H, ...common });
    restarted.addPeer({ address: H, asn: 65001, port: ph, localAddress: R, ...common });
    if (options.absentPeer) restarted.addPeer({ address: ABSENT, asn: 65003, passive: true, ...common });
    await waitFor(() => seen.length, { what: 'the helper to see our OPEN', until: (n) => n > 0, timeoutMs: 10_000 });
    return { helper, restarted, seen, helperPort: ph, helperEndOfRib };
  }

  it('R=1 and F=1 in the OPEN; our table follows the helper’s End-of-RIB; R=0 on the next session', async () => {
    const { helper, restarted, seen, helperPort, helperEndOfRib } = await setup({ selectDeferTime: 60, absentPeer: false });
    assert.equal(seen[0]!.gracefulRestart?.restarting, true);
    assert.deepEqual(seen[0]!.gracefulRestart?.families, [{ family: 'ipv4-unicast', forwardingPreserved: true }]);
    assert.equal(seen[0]!.gracefulRestart?.restartTime, 90);
    const arrived = await waitFor(() => (helper.lookup('10.2.0.0/24') ? performance.now() : 0), {
      what: 'our route at the helper',
      until: (t) => t > 0,
      timeoutMs: 10_000,
      intervalMs: 5,
    });
    assert.ok(helperEndOfRib.at > 0 && helperEndOfRib.at <= arrived, 'sent only after the helper’s End-of-RIB was in');
    // The restart is over: a new session says so.
    restarted.removePeer(H);
    await sleep(300);
    restarted.addPeer({ address: H, asn: 65001, port: helperPort, localAddress: R, holdTime: 9, connectRetryTime: 1 });
    await waitFor(() => seen.length, { what: 'a second session', until: (n) => n > 1, timeoutMs: 10_000 });
    assert.equal(seen.at(-1)!.gracefulRestart?.restarting, false);
  });

  it('a configured peer not up yet is waited for, until the selection deferral timer', async () => {
    const start = performance.now();
    const { helper, restarted } = await setup({ selectDeferTime: 2, absentPeer: true });
    await sleep(1000);
    assert.equal(helper.lookup('10.2.0.0/24'), undefined, 'nothing sent while a configured peer may still bring routes');
    await waitFor(() => helper.lookup('10.2.0.0/24'), {
      what: 'our route after the timer',
      until: (r) => r !== undefined,
      timeoutMs: 10_000,
    });
    const waited = (performance.now() - start) / 1000;
    assert.ok(waited >= 2, `sent after ${waited.toFixed(1)} s`);
    // The helper's route reached us meanwhile: only what we send was held back.
    assert.ok(restarted.lookup('10.1.0.0/24'), "the helper's 10.1.0.0/24 is not in our table");
  });
});
