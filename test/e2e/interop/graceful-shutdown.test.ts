// RFC 8326 graceful shutdown with FRR: two `podroute bgpd` originate the same prefix to FRR,
// which prefers the first. POST /drain on it: FRR's path from it gets GRACEFUL_SHUTDOWN and
// LOCAL_PREF 0, FRR's best path and its kernel route move to the second while the drained
// session is still up, and only then does that session close (Cease 6/2) and the daemon exit.
import assert from 'node:assert/strict';
import { Frr } from '../../support/frr.js';
import { waitEstablished, waitRoutes } from '../../support/lab.js';
import { Lab, type Netns } from '../../support/netns.js';
import { Podroute } from '../../support/podroute.js';
import { waitFor } from '../../support/wait.js';

const F = { asn: 65100, v4: '10.95.0.1' };
// One AS, so that FRR compares MED: the first speaker's path (MED 10) wins over the second's (MED 50).
const P1 = { asn: 65101, v4: '10.95.0.11', med: 10 };
const P2 = { asn: 65101, v4: '10.95.0.12', med: 50 };
const PREFIX = '10.251.0.0/24';

interface FrrPath {
  bestpath?: { overall?: boolean };
  locPrf?: number;
  community?: { string?: string };
  peer?: { peerId?: string };
}

describe('graceful shutdown (RFC 8326): a drained podroute bgpd with FRR and a second path', function () {
  this.timeout(120_000);
  let lab: Lab;
  let nsF: Netns;
  let frr: Frr;
  let p1: Podroute;
  let p2: Podroute;

  before(async () => {
    lab = new Lab({ tag: 'gshut' });
    const sw = await lab.segment();
    nsF = await lab.namespace('f');
    const [ns1, ns2] = await Promise.all([lab.namespace('p1'), lab.namespace('p2')]);
    await sw.attach(nsF, { v4: `${F.v4}/24` });
    await sw.attach(ns1, { v4: `${P1.v4}/24` });
    await sw.attach(ns2, { v4: `${P2.v4}/24` });
    frr = await Frr.start(nsF, {
      routerId: F.v4,
      asn: F.asn,
      peers: [
        { address: P1.v4, remoteAs: P1.asn },
        { address: P2.v4, remoteAs: P2.asn },
      ],
    });
    const speaker = (x: typeof P1) => ({
      routerId: x.v4,
      asn: x.asn,
      peers: [{ address: F.v4, remoteAs: F.asn }],
      networks: [{ prefix: PREFIX, med: x.med }],
    });
    [p1, p2] = await Promise.all([Podroute.start(ns1, speaker(P1)), Podroute.start(ns2, speaker(P2))]);
  });

  after(async () => {
    await lab?.destroy();
  });

  const paths = async () => (await frr.json<{ paths?: FrrPath[] }>(`show bgp ipv4 unicast ${PREFIX} json`)).paths ?? [];
  const kernelVia = async () => /via (\S+)/.exec(await nsF.run(['ip', 'route', 'show', PREFIX]))?.[1];
  const p1State = async () => (await frr.neighbor(P1.v4)).bgpState;

  it('FRR moves its best path and its kernel route to the other speaker before the drained session closes', async () => {
    await Promise.all([waitEstablished(p1), waitEstablished(p2)]);
    await waitFor(paths, { what: 'both paths at FRR', until: (ps) => ps.length === 2 });
    await waitRoutes(frr, 'ipv4', [PREFIX]);
    await waitFor(kernelVia, { what: 'the kernel route via the first speaker', until: (v) => v === P1.v4 });

    await p1.drain({ settleMs: 4000, message: 'maintenance' });
    const moved = await waitFor(paths, {
      what: 'FRR preferring the second speaker',
      until: (ps) => ps.find((p) => p.bestpath?.overall)?.peer?.peerId === P2.v4,
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    assert.equal(await p1State(), 'Established', 'the drained session closed before FRR moved');
    const drained = moved.find((p) => p.peer?.peerId === P1.v4);
    assert.ok(drained?.community?.string?.includes('graceful-shutdown'), `communities: ${drained?.community?.string}`);
    assert.equal(drained?.locPrf, 0, 'FRR did not lower the drained path to LOCAL_PREF 0');
    await waitFor(kernelVia, { what: 'the kernel route via the second speaker', until: (v) => v === P2.v4, timeoutMs: 5_000 });
    assert.equal(await p1State(), 'Established', 'the session closed before the kernel moved');

    await waitFor(p1State, { what: 'the drained session to close', until: (s) => s !== 'Established', timeoutMs: 15_000 });
    const n = await frr.neighbor(P1.v4);
    assert.match(JSON.stringify(n), /maintenance|Administrative Shutdown|Cease/i, 'FRR did not record a Cease');
    await waitFor(() => p1.process.running, { what: 'the drained daemon to exit', until: (r) => !r, timeoutMs: 10_000 });
    assert.equal((await paths()).length, 1);
  });
});
