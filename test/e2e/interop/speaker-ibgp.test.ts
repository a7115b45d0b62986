// Our speaker over iBGP with FRR, BIRD and GoBGP: LOCAL_PREF both ways, next hops kept,
// and routes learned from one iBGP peer never re-advertised to another (no reflection).
import assert from 'node:assert/strict';
import { Bird } from '../../support/bird.js';
import type { Family } from '../../support/bgp-config.js';
import { Frr } from '../../support/frr.js';
import { Gobgp } from '../../support/gobgp.js';
import { waitEstablished, waitRoutes, type BgpDaemon } from '../../support/lab.js';
import { Lab } from '../../support/netns.js';
import { Podroute } from '../../support/podroute.js';

const AS = 65100;
const both: Family[] = ['ipv4', 'ipv6'];
const PR = { v4: '10.96.0.10', v6: 'fd00:96::10' };
const others = [
  { kind: 'frr', v4: '10.96.0.1', v6: 'fd00:96::1', prefix: '10.231.0.0/24', localPref: 200 },
  { kind: 'bird', v4: '10.96.0.2', v6: 'fd00:96::2', prefix: '10.232.0.0/24', localPref: 210 },
  { kind: 'gobgp', v4: '10.96.0.3', v6: 'fd00:96::3', prefix: '10.233.0.0/24', localPref: 220 },
] as const;

describe('speaker interop over iBGP: FRR, BIRD, GoBGP', function () {
  this.timeout(90_000);
  let lab: Lab;
  let pr: Podroute;
  const daemons: Record<string, BgpDaemon> = {};

  before(async () => {
    lab = new Lab({ tag: 'ib' });
    const sw = await lab.segment();
    const nsPr = await lab.namespace('pr');
    await sw.attach(nsPr, { v4: `${PR.v4}/24`, v6: `${PR.v6}/64` });
    const nss = await Promise.all(others.map((o) => lab.namespace(o.kind)));
    await Promise.all(others.map((o, i) => sw.attach(nss[i]!, { v4: `${o.v4}/24`, v6: `${o.v6}/64` })));
    const cfg = (o: (typeof others)[number]) => ({
      routerId: o.v4,
      asn: AS,
      nextHopV6: o.v6,
      peers: [{ address: PR.v4, remoteAs: AS, families: both }],
      networks: [{ prefix: o.prefix, localPref: o.localPref }],
    });
    const [frr, bird, gobgp] = await Promise.all([
      Frr.start(nss[0]!, cfg(others[0]), { zebra: false }),
      Bird.start(nss[1]!, cfg(others[1])),
      Gobgp.start(nss[2]!, cfg(others[2])),
    ]);
    Object.assign(daemons, { frr, bird, gobgp });
    pr = await Podroute.start(nsPr, {
      routerId: PR.v4,
      asn: AS,
      nextHopV6: PR.v6,
      peers: others.map((o) => ({ address: o.v4, remoteAs: AS, families: both })),
      networks: [{ prefix: '10.230.0.0/24', localPref: 150, med: 5 }, '2001:db8:230::/48'],
    });
    await waitEstablished(pr);
  });

  after(async () => {
    await lab?.destroy();
  });

  for (const o of others) {
    it(`${o.kind}'s route arrives with its LOCAL_PREF and next hop, and an empty AS path`, async () => {
      const routes = await waitRoutes(pr, 'ipv4', [o.prefix]);
      const r = routes.find((x) => x.prefix === o.prefix)!;
      assert.equal(r.localPref, o.localPref);
      assert.deepEqual(r.nextHops, [o.v4]);
      assert.deepEqual(r.asPath, []);
    });

    it(`our route reaches ${o.kind} with our LOCAL_PREF and MED, AS path empty`, async () => {
      const routes = await waitRoutes(daemons[o.kind]!, 'ipv4', ['10.230.0.0/24']);
      const r = routes.find((x) => x.prefix === '10.230.0.0/24')!;
      assert.equal(r.localPref, 150);
      assert.equal(r.med, 5);
      assert.deepEqual(r.asPath, []);
      assert.equal(r.nextHops[0], PR.v4);
      const v6 = await waitRoutes(daemons[o.kind]!, 'ipv6', ['2001:db8:230::/48']);
      assert.equal(v6.find((x) => x.prefix === '2001:db8:230::/48')!.nextHops[0], PR.v6);
    });
  }

  it('never passes a route learned over iBGP to another iBGP peer', async () => {
    await waitRoutes(
      pr,
      'ipv4',
      others.map((o) => o.prefix),
    );
    const status = await pr.status();
    for (const o of others) {
      const peer = status.peers.find((p) => p.address === o.v4)!;
      assert.equal(peer.prefixesSent, 2, `${o.kind}: only our own IPv4 and IPv6 routes`);
      const theirs = await daemons[o.kind]!.routes('ipv4');
      const foreign: string[] = others.filter((x) => x.kind !== o.kind).map((x) => x.prefix);
      assert.deepEqual(
        theirs.filter((r) => foreign.includes(r.prefix)),
        [],
        `${o.kind} got another iBGP peer's route`,
      );
    }
  });
});
