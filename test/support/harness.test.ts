// Self-test of the interop harness: FRR, BIRD and GoBGP (and ExaBGP as an injector) come up
// in namespaces, routes originated on each are read back with their attributes on the others
// through the query helpers, and destroy() leaves no namespace and no process behind.
import assert from 'node:assert/strict';
import { Bird } from './bird.js';
import type { Family, RibRoute } from './bgp-config.js';
import { Exabgp } from './exabgp.js';
import { Frr } from './frr.js';
import { Gobgp } from './gobgp.js';
import { waitEstablished, waitNoRoutes, waitRoutes, type BgpDaemon } from './lab.js';
import { Lab, listNamespaces, pidAlive } from './netns.js';

const both: Family[] = ['ipv4', 'ipv6'];

describe('interop harness: FRR, BIRD, GoBGP and ExaBGP in namespaces', function () {
  this.timeout(60_000);
  let lab: Lab;
  let frr: Frr;
  let bird: Bird;
  let gobgp: Gobgp;
  let exabgp: Exabgp;

  before(async () => {
    lab = new Lab({ tag: 'hs' });
    const sw = await lab.segment();
    const [a, b, c, x] = await Promise.all(['frr', 'bird', 'gobgp', 'exa'].map((n) => lab.namespace(n)));
    await sw.attach(a!, { v4: '10.99.0.1/24', v6: 'fd00:99::1/64' });
    await sw.attach(b!, { v4: '10.99.0.2/24', v6: 'fd00:99::2/64' });
    await sw.attach(c!, { v4: '10.99.0.3/24', v6: 'fd00:99::3/64' });
    await sw.attach(x!, { v4: '10.99.0.4/24' });
    [frr, bird, gobgp] = await Promise.all([
      Frr.start(a!, {
        routerId: '10.99.0.1',
        asn: 65001,
        peers: [
          { address: '10.99.0.2', remoteAs: 65002, families: both },
          { address: '10.99.0.3', remoteAs: 65003, families: both },
          { address: '10.99.0.4', remoteAs: 65004, passive: true },
        ],
        networks: [{ prefix: '10.201.0.0/24', med: 11, communities: ['65001:1'], largeCommunities: ['65001:2:3'] }, '2001:db8:201::/48'],
      }),
      Bird.start(b!, {
        routerId: '10.99.0.2',
        asn: 65002,
        nextHopV6: 'fd00:99::2',
        peers: [
          { address: '10.99.0.1', remoteAs: 65001, families: both },
          { address: '10.99.0.3', remoteAs: 65003, families: both },
        ],
        networks: [{ prefix: '10.202.0.0/24', med: 22, communities: ['65002:1'] }, '2001:db8:202::/48'],
      }),
      Gobgp.start(c!, {
        routerId: '10.99.0.3',
        asn: 65003,
        nextHopV6: 'fd00:99::3',
        peers: [
          { address: '10.99.0.1', remoteAs: 65001, families: both },
          { address: '10.99.0.2', remoteAs: 65002, families: both },
        ],
        networks: [{ prefix: '10.203.0.0/24', med: 33, communities: ['65003:1'] }, '2001:db8:203::/48'],
      }),
    ]);
    exabgp = await Exabgp.start(x!, {
      routerId: '10.99.0.4',
      asn: 65004,
      peers: [{ address: '10.99.0.1', remoteAs: 65001 }],
      networks: [{ prefix: '10.204.0.0/24', med: 44, communities: ['65004:1'] }],
    });
  });

  after(async () => {
    await lab?.destroy();
  });

  it('brings every session to Established', async () => {
    for (const daemon of [frr, bird, gobgp] as BgpDaemon[]) {
      const peers = await waitEstablished(daemon);
      assert.deepEqual(peers.map((p) => p.address).sort(), daemon.config.peers.map((p) => p.address).sort());
    }
    // The daemon-specific views agree with the common one.
    const summary = await frr.summary('ipv4');
    assert.equal(summary.peers?.['10.99.0.2']?.state, 'Established');
    assert.equal((await frr.neighbor('10.99.0.3')).remoteAs, 65003);
    const protocol = (await bird.protocols()).find((p) => p.name === bird.protocolFor('10.99.0.3'));
    assert.equal(protocol?.neighborAs, 65003);
    assert.equal(protocol?.bgpState, 'Established');
    const neighbor = (await gobgp.neighbors()).find((n) => n.conf?.neighbor_address === '10.99.0.2');
    assert.equal(neighbor?.conf?.peer_asn, 65002);
  });

  // The path each daemon learns straight from the originator: AS path [origin AS], next hop
  // the originator's address, MED and communities as originated (eBGP keeps MED one hop).
  const originated = [
    {
      asn: 65001,
      address: '10.99.0.1',
      v6: 'fd00:99::1',
      prefix: '10.201.0.0/24',
      prefix6: '2001:db8:201::/48',
      med: 11,
      communities: ['65001:1'],
    },
    {
      asn: 65002,
      address: '10.99.0.2',
      v6: 'fd00:99::2',
      prefix: '10.202.0.0/24',
      prefix6: '2001:db8:202::/48',
      med: 22,
      communities: ['65002:1'],
    },
    {
      asn: 65003,
      address: '10.99.0.3',
      v6: 'fd00:99::3',
      prefix: '10.203.0.0/24',
      prefix6: '2001:db8:203::/48',
      med: 33,
      communities: ['65003:1'],
    },
  ];

  for (const receiver of ['frr', 'bird', 'gobgp'] as const) {
    it(`${receiver} sees the others' IPv4 and IPv6 routes with their attributes`, async () => {
      const daemon: BgpDaemon = { frr, bird, gobgp }[receiver];
      const others = originated.filter((o) => o.asn !== daemon.config.asn);
      const direct = (o: (typeof originated)[number]) => (r: RibRoute) => r.asPath.length === 1 && r.asPath[0] === o.asn;
      const v4 = await waitRoutes(
        daemon,
        'ipv4',
        others.map((o) => o.prefix),
      );
      const v6 = await waitRoutes(
        daemon,
        'ipv6',
        others.map((o) => o.prefix6),
      );
      for (const o of others) {
        const route = v4.find((r) => r.prefix === o.prefix && direct(o)(r));
        assert.ok(route, `${receiver}: no direct path to ${o.prefix} in ${JSON.stringify(v4)}`);
        assert.equal(route.nextHops[0], o.address);
        assert.equal(route.origin, 'igp');
        assert.equal(route.med, o.med);
        assert.deepEqual(route.communities, o.communities);
        assert.equal(route.best, true, `${receiver}: the direct path to ${o.prefix} should be best`);
        const route6 = v6.find((r) => r.prefix === o.prefix6 && direct(o)(r));
        assert.ok(route6, `${receiver}: no direct path to ${o.prefix6} in ${JSON.stringify(v6)}`);
        assert.equal(route6.nextHops[0], o.v6);
      }
      // The FRR route also carries a large community, through BIRD's and GoBGP's parsers.
      if (receiver !== 'frr') {
        const fromFrr = v4.find((r) => r.prefix === '10.201.0.0/24' && r.asPath.length === 1);
        assert.deepEqual(fromFrr?.largeCommunities, ['65001:2:3']);
      }
    });
  }

  it('ExaBGP injects a route that FRR passes on to BIRD and GoBGP', async () => {
    const onFrr = await waitRoutes(frr, 'ipv4', ['10.204.0.0/24']);
    const route = onFrr.find((r) => r.prefix === '10.204.0.0/24')!;
    assert.deepEqual(route.asPath, [65004]);
    assert.equal(route.med, 44);
    assert.deepEqual(route.communities, ['65004:1']);
    for (const daemon of [bird, gobgp] as BgpDaemon[]) {
      await waitRoutes(daemon, 'ipv4', ['10.204.0.0/24'], { where: (r) => r.asPath.join(' ') === '65001 65004' });
    }
    assert.ok(exabgp.process.running, 'the ExaBGP process is not running');
  });

  it('a GoBGP announcement and withdrawal through the CLI reach FRR and BIRD', async () => {
    await gobgp.announce({ prefix: '10.213.0.0/24', localPref: 300, communities: ['65003:99'] });
    for (const daemon of [frr, bird] as BgpDaemon[]) {
      const routes = await waitRoutes(daemon, 'ipv4', ['10.213.0.0/24'], { where: (r) => r.asPath.join(' ') === '65003' });
      const route = routes.find((r) => r.prefix === '10.213.0.0/24' && r.asPath.join(' ') === '65003')!;
      assert.deepEqual(route.communities, ['65003:99']);
    }
    await gobgp.withdraw('10.213.0.0/24');
    for (const daemon of [frr, bird] as BgpDaemon[]) await waitNoRoutes(daemon, 'ipv4', ['10.213.0.0/24']);
  });

  it('destroy() stops every process and deletes every namespace, and can be called twice', async () => {
    const processes = lab.processes;
    const pids = processes.map((p) => p.pid);
    assert.deepEqual(processes.map((p) => p.name).sort(), ['bird/bird', 'exa/exabgp', 'frr/bgpd', 'frr/zebra', 'gobgp/gobgpd']);
    assert.deepEqual(
      processes.filter((p) => !pidAlive(p.pid)).map((p) => `${p.name}: ${p.tail()}`),
      [],
      'all daemons alive before destroy()',
    );
    await lab.destroy();
    await lab.destroy();
    assert.deepEqual(await listNamespaces(lab.prefix), []);
    assert.deepEqual(pids.filter(pidAlive), []);
  });
});
