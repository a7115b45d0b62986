// Felix against the real kernel, in a namespace this test makes: what `ip -j route` shows
// must equal what computeDesiredState says, and nothing of another protocol may change.
import assert from 'node:assert/strict';
import {
  Felix,
  IpBatchDataplane,
  LinuxDataplane,
  PODROUTE_PROTOCOL,
  computeDesiredState,
  loadNative,
  nativeLoadError,
  type Dataplane,
  type FelixInput,
} from '../../felix/index.js';
import { EEXIST, ENETUNREACH, ESRCH } from '../../felix/errno.js';
import { Namespaces, kernelRoutes, sh, trySh } from './netns.js';

const input: FelixInput = {
  node: {
    addressV4: '10.0.1.5/24',
    addressV6: 'fd00:1::5/64',
    uplink: 'eth0',
    vxlanTunnelAddressV4: '10.65.0.0',
    vxlanTunnelMacV4: '66:00:00:00:00:05',
  },
  workloads: [
    { iface: 'cali1', addresses: ['10.65.0.2', 'fd00:65::2'] },
    { iface: 'cali2', addresses: ['10.65.0.3'] },
  ],
  ownBlocks: ['10.65.0.0/26', 'fd00:65::/122'],
  remoteRoutes: [
    { prefix: '10.66.0.0/26', nextHops: ['10.0.1.6'] }, // same subnet: direct
    { prefix: '10.67.0.0/26', nextHops: ['10.0.1.6', '10.0.1.7'] }, // ECMP
    { prefix: '10.68.0.0/26', nextHops: ['10.0.2.8'] }, // other subnet: VXLAN
    { prefix: '10.69.0.0/26', nextHops: ['10.0.1.9'] }, // held by a foreign route
    { prefix: 'fd00:66::/122', nextHops: ['fd00:1::6', 'fd00:1::7'] }, // IPv6 ECMP
  ],
  pools: [{ cidr: '10.64.0.0/10', vxlanMode: 'CrossSubnet' }, { cidr: 'fd00:64::/32' }],
  remoteVteps: [{ nodeIp: '10.0.2.8', vtepIp: '10.68.0.0', vtepMac: '66:00:00:00:00:08' }],
};

const kinds = [
  { title: 'rtnetlink (LinuxDataplane)', prefix: 'fxk', make: (netns: string) => new LinuxDataplane({ netns }) as Dataplane },
  { title: 'ip -batch fallback (IpBatchDataplane)', prefix: 'fxi', make: (netns: string) => new IpBatchDataplane({ netns }) as Dataplane },
];

for (const kind of kinds)
  describe(`felix on the Linux kernel, ${kind.title}, in a network namespace`, function () {
    this.timeout(60_000);
    const spaces = new Namespaces(kind.prefix);
    let ns = '';
    let felix: Felix | undefined;
    let dp: Dataplane | undefined;

    before(() => {
      if (kind.prefix === 'fxk' && !loadNative()) throw new Error(nativeLoadError());
      ns = spaces.add('a');
      sh(`ip -n ${ns} link add eth0 type veth peer name eth0p && ip -n ${ns} link set eth0 up && ip -n ${ns} link set eth0p up`);
      sh(`ip -n ${ns} addr add 10.0.1.5/24 dev eth0 && ip -n ${ns} -6 addr add fd00:1::5/64 dev eth0 nodad`);
      for (const c of ['cali1', 'cali2'])
        sh(`ip -n ${ns} link add ${c} type veth peer name ${c}p && ip -n ${ns} link set ${c} up && ip -n ${ns} link set ${c}p up`);
      // Foreign routes: one elsewhere, one at a destination felix wants.
      sh(`ip -n ${ns} route add 10.70.0.0/26 via 10.0.1.1 proto static`);
      sh(`ip -n ${ns} route add 10.69.0.0/26 via 10.0.1.99 proto static`);
    });
    afterEach(() => {
      felix?.stop();
      dp?.close();
      felix = dp = undefined;
    });
    after(() => spaces.cleanup());

    const expected = (family: 4 | 6) =>
      computeDesiredState(input)
        .routes.filter((r) => r.dst.includes(':') === (family === 6) && r.dst !== '10.69.0.0/26')
        .map((r) => ({ dst: r.dst, type: r.type, nextHops: r.nextHops }));

    const start = async () => {
      dp = kind.make(spaces.path(ns));
      felix = new Felix(dp, { resyncIntervalMs: 0 });
      felix.update(input);
      return felix.start();
    };

    it('programs workload, blackhole, direct, ECMP and VXLAN routes exactly as computed (v4 and v6)', async () => {
      const r = await start();
      assert.deepEqual(r.failures, []);
      assert.deepEqual(
        r.devices.map((d) => [d.name, d.ok]),
        [['vxlan.calico', true]],
      );
      assert.deepEqual(kernelRoutes(ns, 4, PODROUTE_PROTOCOL), expected(4));
      assert.deepEqual(kernelRoutes(ns, 6, PODROUTE_PROTOCOL), expected(6));
      // The foreign route at a wanted destination is reported, not overwritten.
      assert.deepEqual(
        r.conflicts.map((c) => c.dst),
        ['10.69.0.0/26'],
      );
      assert.match(sh(`ip -n ${ns} route show 10.69.0.0/26`), /via 10\.0\.1\.99 dev eth0 proto static/);
      assert.match(sh(`ip -n ${ns} route show 10.70.0.0/26`), /via 10\.0\.1\.1 dev eth0 proto static/);
      // VXLAN device and its neighbour entries.
      const link = JSON.parse(sh(`ip -n ${ns} -j -d link show vxlan.calico`))[0];
      assert.equal(link.linkinfo.info_data.id, 4096);
      assert.equal(link.linkinfo.info_data.port, 4789);
      assert.equal(link.mtu, 1450);
      assert.equal(link.address, '66:00:00:00:00:05');
      assert.match(sh(`ip -n ${ns} neigh show dev vxlan.calico`), /10\.68\.0\.0 lladdr 66:00:00:00:00:08 PERMANENT/);
      assert.match(sh(`ip netns exec ${ns} bridge fdb show dev vxlan.calico`), /66:00:00:00:00:08 dst 10\.0\.2\.8 self permanent/);
      // Sysctls in that namespace.
      assert.equal(sh(`ip netns exec ${ns} cat /proc/sys/net/ipv4/conf/cali1/proxy_arp`).trim(), '1');
      assert.equal(sh(`ip netns exec ${ns} cat /proc/sys/net/ipv4/ip_forward`).trim(), '1');
    });

    it('a second resync with nothing changed writes nothing', async () => {
      const r = await start();
      assert.equal(r.routesCreated + r.routesReplaced + r.routesDeleted + r.neighborsWritten, 0);
      assert.equal(r.routesUnchanged, expected(4).length + expected(6).length);
    });

    it('restores a hand-deleted route, a hand-edited route and a deleted FDB entry on resync', async () => {
      await start();
      sh(`ip -n ${ns} route del 10.65.0.2/32`);
      sh(`ip -n ${ns} route replace 10.66.0.0/26 via 10.0.1.77 dev eth0 proto ${PODROUTE_PROTOCOL}`);
      sh(`ip netns exec ${ns} bridge fdb del 66:00:00:00:00:08 dev vxlan.calico self`);
      const r = await felix!.resync();
      assert.equal(r.routesCreated, 1);
      assert.equal(r.routesReplaced, 1);
      assert.equal(r.neighborsWritten, 1);
      assert.deepEqual(kernelRoutes(ns, 4, PODROUTE_PROTOCOL), expected(4));
      assert.match(sh(`ip netns exec ${ns} bridge fdb show dev vxlan.calico`), /66:00:00:00:00:08 dst 10\.0\.2\.8/);
    });

    it('a restart with stale routes of ours converges to the desired set; foreign routes stay', async () => {
      sh(`ip -n ${ns} route add blackhole 10.99.0.0/26 proto ${PODROUTE_PROTOCOL}`);
      sh(`ip -n ${ns} route add 10.98.0.0/26 via 10.0.1.6 dev eth0 proto ${PODROUTE_PROTOCOL}`);
      sh(`ip -n ${ns} -6 route add blackhole fd00:99::/122 proto ${PODROUTE_PROTOCOL}`);
      sh(`ip -n ${ns} route add 10.65.0.60/32 dev cali1 proto ${PODROUTE_PROTOCOL}`);
      sh(`ip -n ${ns} -6 route add fd00:65::60/128 dev cali1 proto ${PODROUTE_PROTOCOL}`);
      sh(`ip -n ${ns} route del 10.67.0.0/26`);
      const before = sh(`ip -n ${ns} route show proto static`);
      const r = await start();
      assert.deepEqual(r.failures, []);
      assert.equal(r.routesDeleted, 5);
      assert.equal(r.routesCreated, 1);
      assert.deepEqual(kernelRoutes(ns, 4, PODROUTE_PROTOCOL), expected(4));
      assert.deepEqual(kernelRoutes(ns, 6, PODROUTE_PROTOCOL), expected(6));
      assert.equal(sh(`ip -n ${ns} route show proto static`), before);
    });

    it('a route whose device is missing fails alone, with the reason, and goes in when the device appears', async () => {
      felix = undefined;
      dp = kind.make(spaces.path(ns));
      felix = new Felix(dp, { resyncIntervalMs: 0, retryDelayMs: 50 });
      felix.update({ ...input, workloads: [...input.workloads, { iface: 'cali3', addresses: ['10.65.0.4'] }] });
      const r = await felix.start();
      assert.deepEqual(
        r.failures.map((f) => f.dst),
        ['10.65.0.4/32'],
      );
      assert.match(r.failures[0].error, /ENODEV.*cali3/);
      assert.ok(
        r.sysctlFailures.some((s) => /cali3\/proxy_arp/.test(s.error ?? '')),
        `no cali3/proxy_arp sysctl failure: ${JSON.stringify(r.sysctlFailures)}`,
      );
      sh(`ip -n ${ns} link add cali3 type veth peer name cali3p && ip -n ${ns} link set cali3 up && ip -n ${ns} link set cali3p up`);
      const deadline = Date.now() + 10_000;
      while (felix.failures.size && Date.now() < deadline) await new Promise((res) => setTimeout(res, 25));
      assert.match(sh(`ip -n ${ns} route show 10.65.0.4`), /dev cali3 proto 81 scope link/);
    });

    it('changes ECMP sets in place (v4 two hops -> one, v6 hops swapped) with only those writes', async () => {
      await start();
      const changed: FelixInput = {
        ...input,
        remoteRoutes: input.remoteRoutes.map((r) =>
          r.prefix === '10.67.0.0/26'
            ? { ...r, nextHops: ['10.0.1.7'] }
            : r.prefix === 'fd00:66::/122'
              ? { ...r, nextHops: ['fd00:1::6', 'fd00:1::8'] }
              : r,
        ),
      };
      felix!.update(changed);
      const r = await felix!.apply();
      assert.deepEqual(r.failures, []);
      assert.equal(r.routesReplaced, 2);
      assert.equal(r.routesCreated + r.routesDeleted, 0);
      const want = (family: 4 | 6) =>
        computeDesiredState(changed)
          .routes.filter((x) => x.dst.includes(':') === (family === 6) && x.dst !== '10.69.0.0/26')
          .map((x) => ({ dst: x.dst, type: x.type, nextHops: x.nextHops }));
      assert.deepEqual(kernelRoutes(ns, 4, PODROUTE_PROTOCOL), want(4));
      assert.deepEqual(kernelRoutes(ns, 6, PODROUTE_PROTOCOL), want(6));
      felix!.update(input);
      await felix!.apply();
      assert.deepEqual(kernelRoutes(ns, 6, PODROUTE_PROTOCOL), expected(6));
    });

    for (const ackMode of kind.prefix === 'fxk' ? (['each', 'errors'] as const) : (['fallback'] as const)) {
      it(`ackMode ${ackMode}: each request in one batch gets its own outcome, failures in the middle and at the end`, async () => {
        dp = ackMode === 'fallback' ? kind.make(spaces.path(ns)) : new LinuxDataplane({ netns: spaces.path(ns), ackMode, chunkBytes: 200 });
        const route = (dst: string, dev = 'cali2', gateway?: string) => ({
          dst,
          type: 'unicast' as const,
          nextHops: [gateway ? { dev, gateway } : { dev }],
        });
        const writes = [
          { op: 'create' as const, route: route('10.80.0.1/32') },
          { op: 'create' as const, route: route('10.80.0.2/32', 'eth0', '172.16.9.9') }, // gateway not on link
          { op: 'create' as const, route: route('10.80.0.3/32') },
          { op: 'create' as const, route: route('10.80.0.1/32') }, // exists now
          { op: 'create' as const, route: route('10.80.0.4/32') },
          { op: 'delete' as const, route: route('10.80.0.9/32'), metric: 0 }, // not there
        ];
        const out = await dp.writeRoutes(writes, PODROUTE_PROTOCOL);
        assert.deepEqual(
          out.map((o) => o.errno ?? 0),
          [0, ENETUNREACH, 0, EEXIST, 0, ESRCH],
        );
        assert.match(out[1].error!, /Nexthop has invalid gateway/i);
        const del = await dp.writeRoutes(
          ['10.80.0.1/32', '10.80.0.3/32', '10.80.0.4/32'].map((d) => ({ op: 'delete' as const, route: route(d), metric: 0 })),
          PODROUTE_PROTOCOL,
        );
        assert.deepEqual(
          del.map((o) => o.ok),
          [true, true, true],
        );
        assert.equal(sh(`ip -n ${ns} route show root 10.80.0.0/16`), '');
      });
    }

    it('vxlan device: a wrong VNI/port is recreated, MTU and VTEP address corrected, a foreign device of that name left alone', async () => {
      dp = kind.make(spaces.path(ns));
      sh(`ip -n ${ns} link add vxtest type vxlan id 7 dstport 8472 nolearning`);
      const a = await dp.ensureVxlan({ name: 'vxtest', vni: 4097, port: 4789, mtu: 1450, vtepIp: '10.65.9.0' });
      assert.equal(a.ok, true, a.detail);
      assert.match(a.detail, /recreated/);
      const b = await dp.ensureVxlan({ name: 'vxtest', vni: 4097, port: 4789, mtu: 1400, vtepIp: '10.65.9.1' });
      assert.equal(b.ok, true, b.detail);
      const link = JSON.parse(sh(`ip -n ${ns} -j -d addr show vxtest`))[0];
      assert.deepEqual([link.linkinfo.info_data.id, link.linkinfo.info_data.port, link.mtu], [4097, 4789, 1400]);
      assert.deepEqual(
        link.addr_info
          .filter((x: { family: string }) => x.family === 'inet')
          .map((x: { local: string; prefixlen: number }) => `${x.local}/${x.prefixlen}`),
        ['10.65.9.1/32'],
      );
      sh(`ip -n ${ns} link del vxtest`);
      const c = await dp.ensureVxlan({ name: 'cali2', vni: 4096, port: 4789, mtu: 1450, vtepIp: '10.65.9.0' });
      assert.equal(c.ok, false);
      assert.match(c.detail, /a veth device named cali2 exists; felix will not replace a device it did not make/);
    });

    it('tunl0: uses the kernel ipip driver where it exists, reports clearly where it does not', async () => {
      const probe = trySh(`ip -n ${ns} link add fxprobe type ipip && ip -n ${ns} link del fxprobe`);
      dp = kind.make(spaces.path(ns));
      felix = new Felix(dp, { resyncIntervalMs: 0 });
      felix.update({
        ...input,
        node: { ...input.node, ipipTunnelAddress: '10.65.0.1' },
        pools: [{ cidr: '10.64.0.0/10', ipipMode: 'CrossSubnet' }],
      });
      const r = await felix.start();
      const tunl = r.devices.find((d) => d.name === 'tunl0')!;
      if (probe.ok) {
        assert.equal(tunl.ok, true, tunl.detail);
        assert.match(sh(`ip -n ${ns} route show 10.68.0.0/26`), /via 10\.0\.2\.8 dev tunl0 proto 81 onlink/);
      } else {
        assert.match(probe.out, /Unknown device type|not supported/i);
        assert.equal(tunl.ok, false);
        assert.match(tunl.detail, /no ipip driver/);
        assert.deepEqual(
          r.failures.map((f) => [f.dst, f.op, /ENODEV.*tunl0/.test(f.error)]),
          [['10.68.0.0/26', 'replace', true]],
        );
        // A replace that cannot be written leaves the previous route (VXLAN, from the test
        // before) in place rather than nothing, and stays on the retry list.
        assert.match(sh(`ip -n ${ns} route show 10.68.0.0/26`), /dev vxlan\.calico proto 81 onlink/);
        assert.ok(felix.failures.has('10.68.0.0/26'), `10.68.0.0/26 not on the retry list: ${[...felix.failures.keys()].join(', ')}`);
      }
    });
  });
