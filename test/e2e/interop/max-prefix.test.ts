// maxPrefixes against FRR: `podroute bgpd` allows FRR 5 IPv4 prefixes, FRR sends 6. FRR must
// receive Cease 6/1 with the RFC 4486 data (its log prints the bytes, its neighbor JSON the
// reason), our RIB must hold none of FRR's routes, FRR's reconnects must be refused until the
// restart time, and then the session must come back by itself.
import assert from 'node:assert/strict';
import type { PeerStatus } from '../../../bgp/index.js';
import { Frr } from '../../support/frr.js';
import { Lab } from '../../support/netns.js';
import { Podroute } from '../../support/podroute.js';
import { waitFor } from '../../support/wait.js';

const PR = { asn: 65010, v4: '10.96.0.10' };
const F = { asn: 65011, v4: '10.96.0.1' };
const RESTART_AFTER = 8;

describe('maxPrefixes against FRR', function () {
  this.timeout(120_000);
  let lab: Lab;
  let frr: Frr;
  let pr: Podroute;

  before(async () => {
    lab = new Lab({ tag: 'mp' });
    const sw = await lab.segment();
    const nsPr = await lab.namespace('pr');
    const nsF = await lab.namespace('f');
    await sw.attach(nsPr, { v4: `${PR.v4}/24` });
    await sw.attach(nsF, { v4: `${F.v4}/24` });
    frr = await Frr.start(
      nsF,
      {
        routerId: F.v4,
        asn: F.asn,
        peers: [{ address: PR.v4, remoteAs: PR.asn }],
        networks: ['10.231.0.0/24', '10.231.1.0/24', '10.231.2.0/24'],
      },
      { zebra: false },
    );
    // FRR logs a NOTIFICATION (with its data bytes) only when it logs neighbour changes.
    await frr.configureBgp('bgp log-neighbor-changes');
    pr = await Podroute.start(
      nsPr,
      { routerId: PR.v4, asn: PR.asn, peers: [{ address: F.v4, remoteAs: F.asn }] },
      { peerDefaults: { maxPrefixes: { ipv4: { limit: 5, warningThreshold: 80, restartAfter: RESTART_AFTER } } } },
    );
  });

  after(async () => {
    await pr?.stop();
    await frr?.stop();
    await lab?.destroy();
  });

  const ours = async (): Promise<PeerStatus> => (await pr.status()).peers[0]!;

  it('FRR sends 6 of 5: Cease 6/1 with AFI 1, SAFI 1, bound 5; no route kept; back only after the restart time', async () => {
    await waitFor(() => pr.routes('ipv4'), { what: "FRR's 3 routes", until: (r) => r.length === 3, timeoutMs: 30_000 });
    await frr.announce('10.231.3.0/24');
    await waitFor(() => pr.process.tail(), {
      what: 'the warning at 4 of 5',
      until: (t) => t.includes('"event":"max-prefix"'),
      timeoutMs: 15_000,
    });
    assert.match(pr.process.tail(), /"kind":"threshold".*"count":4/);
    assert.equal((await ours()).state, 'Established');

    await frr.announce('10.231.4.0/24');
    await frr.announce('10.231.5.0/24');
    const held = await waitFor(ours, {
      what: 'our peer held down',
      until: (p) => p.maxPrefixes?.heldDown !== undefined,
      timeoutMs: 15_000,
      intervalMs: 50,
    });
    assert.equal(held.state, 'Idle');
    assert.match(held.lastError, /maximum prefixes exceeded: 6 ipv4-unicast paths, limit 5; session down for 8 s/);
    const restartAt = held.maxPrefixes!.heldDown!.restartAt!;
    assert.ok(restartAt > Date.now() + (RESTART_AFTER - 3) * 1000, 'the restart is about 8 s away');
    assert.deepEqual(await pr.routes('ipv4'), [], 'our RIB keeps none of them');

    // FRR saw why: its log has the NOTIFICATION's bytes, its neighbor JSON the reason.
    await waitFor(() => frr.bgpd.tail(), {
      what: "FRR's log of the Cease",
      until: (t) => /NOTIFICATION.*received/.test(t),
      timeoutMs: 10_000,
    });
    const line = frr.bgpd
      .tail()
      .split('\n')
      .find((l) => /NOTIFICATION.*received.*6\/1/.test(l));
    assert.ok(line, `no received 6/1 in FRR's log:\n${frr.bgpd.tail()}`);
    assert.match(line, /Maximum Number of Prefixes Reached/i);
    assert.match(line, /7 bytes 00 01 01 00 00 00 05/);
    const n = await frr.neighbor(PR.v4);
    assert.notEqual(n.bgpState, 'Established');
    assert.match(JSON.stringify(n), /Cease\/Maximum Number of Prefixes Reached/);

    // Under the limit again before the restart, so the new session stays up.
    await frr.withdraw('10.231.5.0/24');
    await frr.withdraw('10.231.4.0/24');
    // FRR retries every 2 s; none of its connections may get through before restartAt.
    while (Date.now() < restartAt - 300) {
      const p = await ours();
      assert.notEqual(p.state, 'Established', `Established ${restartAt - Date.now()} ms before the restart time`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const back = await waitFor(ours, {
      what: 'the session back',
      until: (p) => p.state === 'Established',
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    assert.ok(back.since >= restartAt, `Established at ${back.since}, ${restartAt - back.since} ms before the restart time`);
    assert.equal(back.lastError, '');
    assert.equal(back.maxPrefixes?.heldDown, undefined);
    const routes = await waitFor(() => pr.routes('ipv4'), { what: "FRR's 4 routes back", until: (r) => r.length === 4, timeoutMs: 15_000 });
    assert.deepEqual(routes.map((r) => r.prefix).sort(), ['10.231.0.0/24', '10.231.1.0/24', '10.231.2.0/24', '10.231.3.0/24']);
    await waitFor(() => frr.neighbor(PR.v4), { what: 'FRR Established', until: (x) => x.bgpState === 'Established', timeoutMs: 10_000 });
  });
});
