// A stop for a restart (`stop(message, { graceful: true })`, what SIGTERM means to the node
// agent): sessions that negotiated graceful restart close without a NOTIFICATION, so the peer,
// as helper (RFC 4724 §4.2), keeps our routes; a session without the capability still gets its
// Cease and the peer drops our routes at once. Two speakers over loopback.
import assert from 'node:assert/strict';
import { BgpSpeaker } from '../../bgp/index.js';
import { sleep, waitFor } from '../support/wait.js';

let nextPort = 31000 + (process.pid % 5000) * 4;
const port = () => nextPort++;

const H = '127.0.9.21'; // the helper
const R = '127.0.9.22'; // the speaker that stops

describe('speaker: a graceful stop leaves our routes with the helper', function () {
  this.timeout(30_000);
  const speakers: BgpSpeaker[] = [];
  afterEach(async () => {
    await Promise.all(speakers.splice(0).map((s) => s.stop()));
  });

  async function pair(gracefulRestart: boolean) {
    const ph = port();
    const pr = port();
    const helper = new BgpSpeaker({ asn: 65001, routerId: H, listen: { host: H, port: ph } });
    const leaving = new BgpSpeaker({ asn: 65002, routerId: R, listen: { host: R, port: pr }, forwardingPreserved: true, restartTime: 60 });
    speakers.push(helper);
    await helper.start();
    await leaving.start();
    leaving.originate('10.2.0.0/24', { nextHop: R });
    const notifications: number[] = [];
    helper.on('peerDown', (_, d) => {
      if (d.reason.received) notifications.push(d.reason.received.code);
    });
    const common = { holdTime: 9, connectRetryTime: 1, idleHoldTime: 0.2 };
    helper.addPeer({
      address: R,
      asn: 65002,
      port: pr,
      localAddress: H,
      ...common,
      ...(gracefulRestart ? {} : { gracefulRestart: false }),
    });
    leaving.addPeer({ address: H, asn: 65001, port: ph, localAddress: R, ...common });
    await waitFor(() => helper.lookup('10.2.0.0/24'), { what: 'our route at the helper', timeoutMs: 10_000 });
    return { helper, leaving, notifications };
  }

  it('graceful restart negotiated: no Cease, the route stays at the helper', async () => {
    const { helper, leaving, notifications } = await pair(true);
    await leaving.stop('restarting', { graceful: true });
    await waitFor(() => helper.peerStatus().find((p) => p.address === R)?.state, {
      what: 'the helper to see the session go',
      until: (s) => s !== 'Established',
      timeoutMs: 5_000,
    });
    await sleep(1000);
    assert.deepEqual(notifications, [], 'no NOTIFICATION reached the helper');
    assert.ok(helper.lookup('10.2.0.0/24'), 'the helper keeps the route while we restart');
  });

  it('without the capability on the session: a Cease, and the route goes at once', async () => {
    const { helper, leaving, notifications } = await pair(false);
    await leaving.stop('restarting', { graceful: true });
    await waitFor(() => helper.lookup('10.2.0.0/24'), {
      what: 'the route to leave the helper',
      until: (r) => r === undefined,
      timeoutMs: 5_000,
    });
    assert.deepEqual(notifications, [6], 'the helper got a Cease');
  });

  it('a plain stop sends the Cease even when graceful restart was negotiated', async () => {
    const { helper, leaving, notifications } = await pair(true);
    await leaving.stop('going away');
    await waitFor(() => helper.lookup('10.2.0.0/24'), {
      what: 'the route to leave the helper',
      until: (r) => r === undefined,
      timeoutMs: 5_000,
    });
    assert.deepEqual(notifications, [6]);
  });
});
