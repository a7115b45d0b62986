// Felix against the in-memory dataplane: reconciliation rules without a kernel.
import assert from 'node:assert/strict';
import { Felix, MemoryDataplane, PODROUTE_PROTOCOL, type FelixInput } from '../../felix/index.js';

const input: FelixInput = {
  node: { addressV4: '10.0.1.5/24', uplink: 'eth0', ipipTunnelAddress: '10.65.0.1' },
  workloads: [{ iface: 'cali1', addresses: ['10.65.0.2'] }],
  ownBlocks: ['10.65.0.0/26'],
  remoteRoutes: [
    { prefix: '10.66.0.0/26', nextHops: ['10.0.1.6'] },
    { prefix: '10.67.0.0/26', nextHops: ['10.0.2.7'] },
  ],
  pools: [{ cidr: '10.64.0.0/10', ipipMode: 'CrossSubnet' }],
  remoteVteps: [],
};

function ours(dp: MemoryDataplane) {
  return [...dp.routes.values()]
    .filter((r) => r.protocol === PODROUTE_PROTOCOL)
    .map((r) => r.dst)
    .sort();
}

describe('felix reconciliation (in-memory dataplane)', () => {
  let felix: Felix | undefined;
  afterEach(() => felix?.stop());

  it('programs the desired set, including IPIP via tunl0 with its address', async () => {
    const dp = new MemoryDataplane({ links: ['eth0', 'cali1'] });
    felix = new Felix(dp, { resyncIntervalMs: 0 });
    felix.update(input);
    const r = await felix.start();
    assert.deepEqual(r.failures, []);
    assert.equal(r.routesCreated, 4);
    assert.deepEqual(ours(dp), ['10.65.0.0/26', '10.65.0.2/32', '10.66.0.0/26', '10.67.0.0/26']);
    assert.deepEqual(dp.routes.get('10.67.0.0/26|0')?.nextHops, [{ dev: 'tunl0', gateway: '10.0.2.7', onlink: true }]);
    assert.deepEqual(dp.links.get('tunl0')?.addresses, ['10.65.0.1/32']);
    assert.equal(dp.sysctls.get('net/ipv4/conf/cali1/proxy_arp'), '1');
    assert.equal(dp.sysctls.get('net/ipv4/ip_forward'), '1');
  });

  it('applies only the difference on change, and nothing when nothing changed', async () => {
    const dp = new MemoryDataplane({ links: ['eth0', 'cali1', 'cali2'] });
    felix = new Felix(dp, { resyncIntervalMs: 0 });
    felix.update(input);
    await felix.start();
    const before = dp.writes;
    felix.setLocalWorkloads([...input.workloads, { iface: 'cali2', addresses: ['10.65.0.3'] }]);
    await felix.settled();
    assert.equal(dp.writes - before, 1);
    const again = await felix.resync();
    assert.equal(again.routesUnchanged, 5);
    assert.equal(dp.writes - before, 1);
    felix.setRemoteRoutes([]);
    const r = await felix.apply();
    assert.equal(r.routesDeleted, 2);
    const writes = dp.writes;
    await felix.settled();
    assert.equal(dp.writes, writes, 'the queued run after apply() has nothing left to do');
    assert.deepEqual(ours(dp), ['10.65.0.0/26', '10.65.0.2/32', '10.65.0.3/32']);
  });

  it('resync restores a deleted route, removes a stale one of ours, never touches a foreign one', async () => {
    const dp = new MemoryDataplane({ links: ['eth0', 'cali1'] });
    dp.inject({ dst: '10.99.0.0/26', type: 'blackhole', nextHops: [], protocol: PODROUTE_PROTOCOL, table: 254, metric: 0 }); // stale, ours
    dp.inject({
      dst: '10.66.0.0/26',
      type: 'unicast',
      nextHops: [{ dev: 'eth0', gateway: '10.0.1.99' }],
      protocol: 4,
      table: 254,
      metric: 0,
    }); // static, foreign
    felix = new Felix(dp, { resyncIntervalMs: 0 });
    felix.update(input);
    const r = await felix.start();
    assert.equal(r.routesDeleted, 1);
    assert.deepEqual(
      r.conflicts.map((c) => [c.dst, c.holder.protocol]),
      [['10.66.0.0/26', 4]],
    );
    assert.equal(dp.routes.get('10.66.0.0/26|0')?.protocol, 4, 'foreign route untouched');
    dp.routes.delete('10.65.0.2/32|0'); // deleted by hand
    const r2 = await felix.resync();
    assert.equal(r2.routesCreated, 1);
    assert.ok(dp.routes.has('10.65.0.2/32|0'), '10.65.0.2/32 deleted by hand was not re-created by the resync');
  });

  it('a failed write is reported per route and retried until it succeeds', async () => {
    const dp = new MemoryDataplane({ links: ['eth0', 'cali1'] });
    dp.failNext.set('10.65.0.2/32', 2);
    felix = new Felix(dp, { resyncIntervalMs: 0, retryDelayMs: 20 });
    const reports: number[] = [];
    felix.on('report', (r) => reports.push(r.failures.length));
    felix.update(input);
    const r = await felix.start();
    assert.deepEqual(
      r.failures.map((f) => [f.dst, f.op]),
      [['10.65.0.2/32', 'create']],
    );
    assert.match(r.failures[0].error, /ENOBUFS/);
    assert.ok(felix.failures.has('10.65.0.2/32'), `10.65.0.2/32 not on the retry list: ${[...felix.failures.keys()].join(', ')}`);
    const deadline = Date.now() + 5000;
    while (felix.failures.size && Date.now() < deadline) await new Promise((res) => setTimeout(res, 10));
    assert.equal(felix.failures.size, 0);
    assert.ok(dp.routes.has('10.65.0.2/32|0'), '10.65.0.2/32 not created by the retry');
    assert.deepEqual(reports.slice(0, 3), [1, 1, 0]);
  });

  it('a missing device is a per-route failure, and the route goes in once the device exists', async () => {
    const dp = new MemoryDataplane({ links: ['eth0'] });
    felix = new Felix(dp, { resyncIntervalMs: 0, retryDelayMs: 10 });
    felix.update(input);
    const r = await felix.start();
    assert.deepEqual(
      r.failures.map((f) => f.dst),
      ['10.65.0.2/32'],
    );
    assert.match(r.failures[0].error, /ENODEV/);
    dp.addLink('cali1');
    const deadline = Date.now() + 5000;
    while (!dp.routes.has('10.65.0.2/32|0') && Date.now() < deadline) await new Promise((res) => setTimeout(res, 10));
    assert.ok(dp.routes.has('10.65.0.2/32|0'), '10.65.0.2/32 not created once cali1 appeared');
  });

  it('no ipip driver: tunl0 reported unavailable, tunl0 routes fail with a reason, others go in', async () => {
    const dp = new MemoryDataplane({ links: ['eth0', 'cali1'], ipipDriver: false });
    felix = new Felix(dp, { resyncIntervalMs: 0 });
    felix.update(input);
    const r = await felix.start();
    assert.deepEqual(
      r.devices.map((d) => [d.name, d.ok]),
      [['tunl0', false]],
    );
    assert.match(r.devices[0].detail, /no ipip driver/);
    assert.deepEqual(
      r.failures.map((f) => f.dst),
      ['10.67.0.0/26'],
    );
    assert.ok(dp.routes.has('10.66.0.0/26|0'), '10.66.0.0/26 not programmed beside the failed tunl0 route');
  });

  it('VXLAN: device with VTEP address, ARP and FDB entries; stale entries removed', async () => {
    const dp = new MemoryDataplane({ links: ['eth0'] });
    felix = new Felix(dp, { resyncIntervalMs: 0 });
    felix.update({
      ...input,
      workloads: [],
      node: { ...input.node, vxlanTunnelAddressV4: '10.65.0.0', vxlanTunnelMacV4: '66:00:00:00:00:05' },
      pools: [{ cidr: '10.64.0.0/10', vxlanMode: 'Always' }],
      remoteVteps: [
        { nodeIp: '10.0.1.6', vtepIp: '10.66.0.0', vtepMac: '66:00:00:00:00:06' },
        { nodeIp: '10.0.2.7', vtepIp: '10.67.0.0', vtepMac: '66:00:00:00:00:07' },
      ],
    });
    const r = await felix.start();
    assert.deepEqual(r.failures, []);
    assert.equal(dp.links.get('vxlan.calico')?.mac, '66:00:00:00:00:05');
    assert.equal(dp.neighbors.size, 4);
    felix.setRemoteVteps([{ nodeIp: '10.0.1.6', vtepIp: '10.66.0.0', vtepMac: '66:00:00:00:00:06' }]);
    await felix.settled();
    assert.deepEqual([...dp.neighbors.values()].map((n) => `${n.kind} ${n.address}`).sort(), ['arp 10.66.0.0', 'fdb 10.0.1.6']);
    assert.deepEqual(ours(dp), ['10.65.0.0/26', '10.66.0.0/26'], 'the route without a VTEP is withdrawn');
  });

  it('forgets the sysctls of pods that are gone: bounded under churn, and set again when an interface name comes back', async () => {
    const dp = new MemoryDataplane({ links: ['eth0', 'cali1'] });
    felix = new Felix(dp, { resyncIntervalMs: 0 });
    felix.update(input);
    await felix.start();
    const done = () => (felix as unknown as { sysctlDone: Set<string> }).sysctlDone.size;
    const steady = done();
    for (let i = 0; i < 200; i++) {
      const iface = `caliw${i}`;
      dp.addLink(iface);
      felix.setLocalWorkloads([...input.workloads, { iface, addresses: [`10.65.0.${10 + (i % 50)}`] }]);
      await felix.settled();
      assert.equal(dp.sysctls.get(`net/ipv4/conf/${iface}/proxy_arp`), '1', `proxy_arp on ${iface}`);
    }
    felix.setLocalWorkloads(input.workloads);
    await felix.settled();
    assert.equal(done(), steady, 'the sysctls felix remembers as set are those of the pods it has, not of every pod it saw');
    // The pod on cali1 goes, its veth with it (the kernel forgets the interface's settings),
    // then a pod comes back under the same interface name.
    felix.setLocalWorkloads([]);
    await felix.settled();
    dp.sysctls.delete('net/ipv4/conf/cali1/proxy_arp');
    felix.setLocalWorkloads(input.workloads);
    await felix.settled();
    assert.equal(dp.sysctls.get('net/ipv4/conf/cali1/proxy_arp'), '1', 'proxy_arp set again on the new cali1');
  });

  it('bad input throws, names the field, and leaves the state as it was', async () => {
    const dp = new MemoryDataplane({ links: ['eth0', 'cali1'] });
    felix = new Felix(dp, { resyncIntervalMs: 0 });
    felix.update(input);
    await felix.start();
    assert.throws(() => felix!.setOwnBlocks(['10.65.0.0/33']), /ownBlocks\[0\]/);
    assert.deepEqual(felix.input.ownBlocks, ['10.65.0.0/26']);
    const r = await felix.resync();
    assert.equal(r.routesUnchanged, 4);
  });
});

describe('felix when the dataplane itself fails', () => {
  class Flaky extends MemoryDataplane {
    failDumps = 0;
    override async listRoutes() {
      if (this.failDumps > 0) {
        this.failDumps--;
        throw new Error('dump refused (injected)');
      }
      return super.listRoutes();
    }
  }
  let felix: Felix | undefined;
  afterEach(() => felix?.stop());

  it('start() rejects with the cause, then felix retries on its own and converges', async () => {
    const dp = new Flaky({ links: ['eth0', 'cali1'] });
    dp.failDumps = 1;
    felix = new Felix(dp, { resyncIntervalMs: 0, retryDelayMs: 20 });
    felix.update(input);
    await assert.rejects(felix.start(), /dump refused/);
    const deadline = Date.now() + 5000;
    while (ours(dp).length < 4 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 10));
    assert.equal(ours(dp).length, 4);
  });

  it('a failing timer resync with no error listener does not crash; it goes to stderr and recovers', async () => {
    const dp = new Flaky({ links: ['eth0', 'cali1'] });
    felix = new Felix(dp, { resyncIntervalMs: 30, retryDelayMs: 20 });
    felix.update(input);
    await felix.start();
    const written: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => {
      written.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    try {
      dp.failDumps = 2;
      dp.routes.delete('10.65.0.2/32|0');
      const deadline = Date.now() + 5000;
      while (!dp.routes.has('10.65.0.2/32|0') && Date.now() < deadline) await new Promise((res) => setTimeout(res, 10));
    } finally {
      process.stderr.write = write;
    }
    assert.ok(dp.routes.has('10.65.0.2/32|0'), 'repaired after the dump came back');
    assert.ok(
      written.some((l) => /felix: in-memory dataplane: dump refused/.test(l)),
      written.join(''),
    );
  });
});
