// Felix resolving learned next hops through the node's own routes: taken from the dataplane's
// dump (in memory), and in a real namespace re-resolved when a route under a next hop changes,
// with no resync timer: the kernel's route notices alone drive it.
import assert from 'node:assert/strict';
import {
  Felix,
  IpBatchDataplane,
  LinuxDataplane,
  loadNative,
  MemoryDataplane,
  nativeLoadError,
  PODROUTE_PROTOCOL,
  type FelixInput,
} from '../../felix/index.js';
import { waitFor } from '../support/wait.js';
import { kernelRoutes, Namespaces, sh } from './netns.js';

const input: Partial<FelixInput> = {
  node: { addressV4: '10.0.1.5/24', uplink: 'eth0' },
  remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: ['10.90.255.1'] }],
};

describe('felix: learned next hops resolved through the node table', function () {
  this.timeout(30_000);

  it('in memory: a foreign link route found by the resync resolves the next hop; until then it is unresolved', async () => {
    const dp = new MemoryDataplane({ links: ['eth0', 'eth1'] });
    const felix = new Felix(dp, { resyncIntervalMs: 0 });
    felix.update(input);
    let report = await felix.start();
    assert.equal(report.unresolved, 1, 'no route to 10.90.255.1 yet');
    assert.match(felix.unresolved.get('10.66.0.0/26') ?? '', /no route to next hop 10\.90\.255\.1/);
    assert.equal(dp.routes.size, 0, 'nothing written for a route with no usable next hop');

    dp.inject({
      dst: '10.90.0.0/16',
      type: 'unicast',
      nextHops: [{ dev: 'eth1', gateway: '10.0.9.1' }],
      protocol: 4,
      table: 254,
      metric: 0,
    });
    report = await felix.resync();
    assert.equal(report.unresolved, 0, 'resolved once the table has a route');
    assert.equal(felix.unresolved.size, 0, 'nothing left unresolved');
    assert.deepEqual(dp.routes.get('10.66.0.0/26|0')?.nextHops, [{ dev: 'eth1', gateway: '10.0.9.1' }]);
    felix.stop();
  });

  describe('on the Linux kernel', () => {
    const spaces = new Namespaces('fxr');
    let ns = '';
    let felix: Felix | undefined;
    let dp: LinuxDataplane | undefined;

    before(() => {
      if (!loadNative()) throw new Error(nativeLoadError());
      ns = spaces.add('a');
      sh(`ip -n ${ns} link add eth0 type veth peer name eth0p && ip -n ${ns} link set eth0 up && ip -n ${ns} link set eth0p up`);
      sh(`ip -n ${ns} link add eth1 type veth peer name eth1p && ip -n ${ns} link set eth1 up && ip -n ${ns} link set eth1p up`);
      sh(`ip -n ${ns} addr add 10.0.1.5/24 dev eth0 && ip -n ${ns} addr add 10.0.9.5/24 dev eth1`);
      // The ToR's loopback, reached by a link route, as Calico's L3 fabric draws it.
      sh(`ip -n ${ns} route add 10.90.255.1/32 dev eth0 scope link`);
    });
    after(() => {
      felix?.stop();
      dp?.close();
      spaces.cleanup();
    });

    const ours = () => kernelRoutes(ns, 4, PODROUTE_PROTOCOL).find((r) => r.dst === '10.66.0.0/26');

    it('installs via the link route, and follows the route under the next hop as it changes', async () => {
      dp = new LinuxDataplane({ netns: spaces.path(ns) });
      felix = new Felix(dp, { resyncIntervalMs: 0, sysctls: false });
      felix.update(input);
      await felix.start();
      assert.deepEqual(ours()?.nextHops, [{ dev: 'eth0', gateway: '10.90.255.1' }]);

      // The link route goes, a static route over eth1 takes its place: re-resolved without a resync timer.
      sh(`ip -n ${ns} route del 10.90.255.1/32 dev eth0 && ip -n ${ns} route add 10.90.0.0/16 via 10.0.9.1 dev eth1`);
      await waitFor(async () => ours(), {
        what: '10.66.0.0/26 via 10.0.9.1 dev eth1',
        until: (r) => JSON.stringify(r?.nextHops) === JSON.stringify([{ dev: 'eth1', gateway: '10.0.9.1' }]),
        timeoutMs: 5_000,
        intervalMs: 50,
      });

      // Nothing under it any more: the route leaves the kernel and is unresolved, with why.
      sh(`ip -n ${ns} route del 10.90.0.0/16`);
      await waitFor(async () => ours(), { what: '10.66.0.0/26 removed', until: (r) => r === undefined, timeoutMs: 5_000, intervalMs: 50 });
      await felix.settled();
      assert.match(felix.unresolved.get('10.66.0.0/26') ?? '', /no route to next hop 10\.90\.255\.1/);

      // A default route: resolved through it.
      sh(`ip -n ${ns} route add default via 10.0.1.1 dev eth0`);
      await waitFor(async () => ours(), {
        what: '10.66.0.0/26 via 10.0.1.1 dev eth0',
        until: (r) => JSON.stringify(r?.nextHops) === JSON.stringify([{ dev: 'eth0', gateway: '10.0.1.1' }]),
        timeoutMs: 5_000,
        intervalMs: 50,
      });
      assert.equal(felix.unresolved.size, 0, 'resolved again');
    });

    it('the ip -batch fallback reads the default route too, and resolves through it at a resync', async () => {
      felix?.stop();
      dp?.close();
      felix = undefined;
      dp = undefined;
      const ipb = new IpBatchDataplane({ netns: spaces.path(ns) });
      const f = new Felix(ipb, { resyncIntervalMs: 0, sysctls: false });
      f.update({ ...input, remoteRoutes: [{ prefix: '10.67.0.0/26', nextHops: ['192.0.2.1'] }] });
      await f.start();
      f.stop();
      const r = kernelRoutes(ns, 4, PODROUTE_PROTOCOL).find((x) => x.dst === '10.67.0.0/26');
      assert.deepEqual(r?.nextHops, [{ dev: 'eth0', gateway: '10.0.1.1' }]);
    });
  });
});
