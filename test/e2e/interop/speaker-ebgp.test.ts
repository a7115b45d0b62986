// Our speaker (`podroute bgpd` in its own namespace) against FRR, BIRD and GoBGP over eBGP,
// IPv4 and IPv6 on one session each: sessions, routes both ways with their attributes
// checked in both RIBs, withdrawals both ways, and a clean stop seen as a Cease.
import assert from 'node:assert/strict';
import { Bird } from '../../support/bird.js';
import type { Family, RibRoute } from '../../support/bgp-config.js';
import { Frr } from '../../support/frr.js';
import { Gobgp } from '../../support/gobgp.js';
import { waitEstablished, waitNoRoutes, waitRoutes, type BgpDaemon } from '../../support/lab.js';
import { Lab } from '../../support/netns.js';
import { Podroute } from '../../support/podroute.js';
import { waitFor } from '../../support/wait.js';

const both: Family[] = ['ipv4', 'ipv6'];
const PR = { asn: 65010, v4: '10.98.0.10', v6: 'fd00:98::10' };
const others = [
  {
    kind: 'frr',
    asn: 65001,
    v4: '10.98.0.1',
    v6: 'fd00:98::1',
    prefix: '10.211.0.0/24',
    prefix6: '2001:db8:211::/48',
    med: 11,
    community: '65001:1',
  },
  {
    kind: 'bird',
    asn: 65002,
    v4: '10.98.0.2',
    v6: 'fd00:98::2',
    prefix: '10.212.0.0/24',
    prefix6: '2001:db8:212::/48',
    med: 22,
    community: '65002:1',
  },
  {
    kind: 'gobgp',
    asn: 65003,
    v4: '10.98.0.3',
    v6: 'fd00:98::3',
    prefix: '10.213.0.0/24',
    prefix6: '2001:db8:213::/48',
    med: 33,
    community: '65003:1',
  },
] as const;

describe('speaker interop over eBGP: FRR, BIRD, GoBGP (IPv4 + IPv6)', function () {
  this.timeout(90_000);
  let lab: Lab;
  let pr: Podroute;
  const daemons: Record<string, BgpDaemon & { ns?: unknown }> = {};

  before(async () => {
    lab = new Lab({ tag: 'eb' });
    const sw = await lab.segment();
    const nsPr = await lab.namespace('pr');
    await sw.attach(nsPr, { v4: `${PR.v4}/24`, v6: `${PR.v6}/64` });
    const nss = await Promise.all(others.map((o) => lab.namespace(o.kind)));
    await Promise.all(others.map((o, i) => sw.attach(nss[i]!, { v4: `${o.v4}/24`, v6: `${o.v6}/64` })));
    const peerOf = (o: (typeof others)[number]) => ({
      routerId: o.v4,
      asn: o.asn,
      nextHopV6: o.v6,
      peers: [{ address: PR.v4, remoteAs: PR.asn, families: both }],
      networks: [{ prefix: o.prefix, med: o.med, communities: [o.community] }, o.prefix6],
    });
    const [frr, bird, gobgp] = await Promise.all([
      Frr.start(nss[0]!, peerOf(others[0])),
      Bird.start(nss[1]!, peerOf(others[1])),
      Gobgp.start(nss[2]!, peerOf(others[2])),
    ]);
    Object.assign(daemons, { frr, bird, gobgp });
    pr = await Podroute.start(nsPr, {
      routerId: PR.v4,
      asn: PR.asn,
      nextHopV6: PR.v6,
      peers: others.map((o) => ({ address: o.v4, remoteAs: o.asn, families: both })),
      networks: [{ prefix: '10.210.0.0/24', med: 7, communities: ['65010:7'], largeCommunities: ['65010:1:2'] }, '2001:db8:210::/48'],
    });
  });

  after(async () => {
    await lab?.destroy();
  });

  it('reaches Established with every peer, on both sides', async () => {
    const ours = await waitEstablished(pr);
    assert.deepEqual(ours.map((p) => p.address).sort(), others.map((o) => o.v4).sort());
    for (const o of others) await waitEstablished(daemons[o.kind]!);
  });

  for (const o of others) {
    it(`${o.kind}'s routes arrive in our RIB with next hop, AS path, origin, MED and communities`, async () => {
      const v4 = await waitRoutes(pr, 'ipv4', [o.prefix]);
      const r = v4.find((x) => x.prefix === o.prefix)!;
      assert.deepEqual(r.nextHops, [o.v4]);
      assert.deepEqual(r.asPath, [o.asn]);
      assert.equal(r.origin, 'igp');
      assert.equal(r.med, o.med);
      assert.deepEqual(r.communities, [o.community]);
      assert.equal(r.from, o.v4);
      const v6 = await waitRoutes(pr, 'ipv6', [o.prefix6]);
      const r6 = v6.find((x) => x.prefix === o.prefix6)!;
      assert.equal(r6.nextHops[0], o.v6);
      assert.deepEqual(r6.asPath, [o.asn]);
    });

    it(`our routes arrive in ${o.kind}'s RIB: next hop self, our AS prepended, MED and communities kept`, async () => {
      const d = daemons[o.kind]!;
      const v4 = await waitRoutes(d, 'ipv4', ['10.210.0.0/24']);
      const r = v4.find((x) => x.prefix === '10.210.0.0/24')!;
      assert.deepEqual(r.nextHops.slice(0, 1), [PR.v4]);
      assert.deepEqual(r.asPath, [PR.asn]);
      assert.equal(r.origin, 'igp');
      assert.equal(r.med, 7);
      assert.deepEqual(r.communities, ['65010:7']);
      assert.deepEqual(r.largeCommunities, ['65010:1:2']);
      const v6 = await waitRoutes(d, 'ipv6', ['2001:db8:210::/48']);
      const r6 = v6.find((x) => x.prefix === '2001:db8:210::/48')!;
      assert.equal(r6.nextHops[0], PR.v6);
      assert.deepEqual(r6.asPath, [PR.asn]);
    });

    it(`routes learned from the other peers reach ${o.kind} with both ASes in the path`, async () => {
      const d = daemons[o.kind]!;
      const third = others.filter((x) => x.kind !== o.kind);
      const where = (r: RibRoute) => r.asPath.length === 2 && r.asPath[0] === PR.asn;
      const v4 = await waitRoutes(
        d,
        'ipv4',
        third.map((x) => x.prefix),
        { where },
      );
      for (const x of third) {
        const r = v4.find((y) => y.prefix === x.prefix && where(y))!;
        assert.deepEqual(r.asPath, [PR.asn, x.asn]);
        assert.equal(r.nextHops[0], PR.v4);
        assert.equal(r.med, undefined, 'MED is not passed on to another AS');
      }
    });
  }

  it('a withdrawal on our side removes the route everywhere, and it comes back', async () => {
    await pr.withdraw('10.210.0.0/24');
    for (const o of others) await waitNoRoutes(daemons[o.kind]!, 'ipv4', ['10.210.0.0/24']);
    await pr.originate('10.210.0.0/24', { med: 7 });
    for (const o of others) await waitRoutes(daemons[o.kind]!, 'ipv4', ['10.210.0.0/24']);
  });

  it("a peer's withdrawal removes its route from our RIB (GoBGP's CLI)", async () => {
    const gobgp = daemons.gobgp as Gobgp;
    await gobgp.announce({ prefix: '10.223.0.0/24' });
    await waitRoutes(pr, 'ipv4', ['10.223.0.0/24']);
    await gobgp.withdraw('10.223.0.0/24');
    await waitNoRoutes(pr, 'ipv4', ['10.223.0.0/24']);
  });

  it('a peer stopped (BIRD, SIGTERM): its routes leave our RIB, and the session returns with it', async () => {
    const bird = daemons.bird as Bird;
    await bird.stop();
    await waitNoRoutes(pr, 'ipv4', ['10.212.0.0/24'], 30_000);
    const restarted = await Bird.start(bird.ns, bird.config);
    daemons.bird = restarted;
    await waitRoutes(pr, 'ipv4', ['10.212.0.0/24'], { timeoutMs: 30_000 });
    await waitRoutes(restarted, 'ipv4', ['10.210.0.0/24'], { timeoutMs: 30_000 });
  });

  it('a peer killed with SIGKILL: the TCP reset takes its routes out of our RIB at once', async () => {
    const gobgp = daemons.gobgp as Gobgp;
    await waitRoutes(pr, 'ipv4', ['10.213.0.0/24']);
    const t0 = Date.now();
    await gobgp.process.stop(0, 'SIGKILL');
    await waitNoRoutes(pr, 'ipv4', ['10.213.0.0/24'], 8_000);
    assert.ok(Date.now() - t0 < 8_000, 'before the 9 s hold timer could have fired');
    const status = await pr.status();
    assert.notEqual(status.peers.find((p) => p.address === others[2].v4)!.state, 'Established');
  });

  it('our clean stop reaches FRR as a Cease with our shutdown communication', async () => {
    const frr = daemons.frr as Frr;
    await pr.stop('maintenance window');
    const n = await waitFor(() => frr.vtysh(`show bgp neighbors ${PR.v4} json`).then((t) => JSON.parse(t)[PR.v4]), {
      what: 'FRR neighbor leaves Established',
      until: (x) => x?.bgpState !== 'Established',
      timeoutMs: 15_000,
    });
    const text = JSON.stringify(n);
    assert.match(text, /Cease|Administrative Shutdown|maintenance window/i, text.slice(0, 2000));
  });
});
