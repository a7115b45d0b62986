// An IPv6 remote block that moves from direct to VXLAN, in a namespace's kernel. Linux checks
// an IPv6 onlink gateway against the route table, and the route being replaced (the block
// via the node on eth0) covers the new gateway (the node's VTEP, inside that block) through
// another device: the plain replace fails with EINVAL. Felix must still get there, and both
// Linux dataplanes do it themselves (delete, then create), Felix knowing nothing of it.
import assert from 'node:assert/strict';
import {
  Felix,
  IpBatchDataplane,
  LinuxDataplane,
  PODROUTE_PROTOCOL,
  loadNative,
  nativeLoadError,
  type Dataplane,
  type FelixInput,
} from '../../felix/index.js';
import { Namespaces, kernelRoutes, sh } from './netns.js';

const input: FelixInput = {
  node: {
    addressV6: 'fd00:1::5/64',
    uplink: 'eth0',
    vxlanTunnelAddressV6: 'fd00:65::',
    vxlanTunnelMacV6: '66:00:00:00:60:05',
  },
  workloads: [],
  ownBlocks: ['fd00:65::/122'],
  remoteRoutes: [{ prefix: 'fd00:66::/122', nextHops: ['fd00:1::6'] }], // same subnet
  pools: [{ cidr: 'fd00::/16', vxlanMode: 'CrossSubnet' }],
  remoteVteps: [{ nodeIp: 'fd00:1::6', vtepIp: 'fd00:66::', vtepMac: '66:00:00:00:60:06' }],
};

const kinds = [
  { title: 'rtnetlink (LinuxDataplane)', prefix: 'fx6k', make: (netns: string) => new LinuxDataplane({ netns }) as Dataplane },
  { title: 'ip -batch fallback (IpBatchDataplane)', prefix: 'fx6i', make: (netns: string) => new IpBatchDataplane({ netns }) as Dataplane },
];

for (const kind of kinds)
  describe(`felix, an IPv6 block from direct to VXLAN, ${kind.title}`, function () {
    this.timeout(60_000);
    const spaces = new Namespaces(kind.prefix);
    let ns = '';
    let felix: Felix | undefined;
    let dp: Dataplane | undefined;

    before(() => {
      if (kind.prefix === 'fx6k' && !loadNative()) throw new Error(nativeLoadError());
      ns = spaces.add('a');
      sh(`ip -n ${ns} link add eth0 type veth peer name eth0p && ip -n ${ns} link set eth0 up && ip -n ${ns} link set eth0p up`);
      sh(`ip -n ${ns} -6 addr add fd00:1::5/64 dev eth0 nodad`);
    });
    after(() => {
      felix?.stop();
      dp?.close();
      spaces.cleanup();
    });

    const block = () => kernelRoutes(ns, 6, PODROUTE_PROTOCOL).filter((r) => r.dst === 'fd00:66::/122');

    it('CrossSubnet, same subnet: direct; Always: via the VTEP on vxlan-v6.calico onlink; and back', async () => {
      dp = kind.make(spaces.path(ns));
      felix = new Felix(dp, { resyncIntervalMs: 0, sysctls: false });
      felix.update(input);
      const first = await felix.start();
      assert.deepEqual(first.failures, []);
      assert.deepEqual(block(), [{ dst: 'fd00:66::/122', type: 'unicast', nextHops: [{ dev: 'eth0', gateway: 'fd00:1::6' }] }]);
      // A plain replace is what the kernel refuses: the reason felix needs another way.
      const plain = sh(
        `ip -n ${ns} -6 route replace fd00:66::/122 via fd00:66:: dev vxlan-v6.calico onlink proto ${PODROUTE_PROTOCOL} 2>&1 || true`,
      );
      assert.match(plain, /invalid gateway|Invalid argument/i);

      felix.update({ pools: [{ cidr: 'fd00::/16', vxlanMode: 'Always' }] });
      const r = await felix.apply();
      assert.deepEqual(r.failures, []);
      assert.deepEqual(block(), [
        { dst: 'fd00:66::/122', type: 'unicast', nextHops: [{ dev: 'vxlan-v6.calico', gateway: 'fd00:66::', onlink: true }] },
      ]);
      const again = await felix.resync();
      assert.equal(again.routesReplaced + again.routesCreated, 0, 'what felix recorded is what the kernel has');

      felix.update({ pools: [{ cidr: 'fd00::/16', vxlanMode: 'CrossSubnet' }] });
      assert.deepEqual((await felix.apply()).failures, []);
      assert.deepEqual(block(), [{ dst: 'fd00:66::/122', type: 'unicast', nextHops: [{ dev: 'eth0', gateway: 'fd00:1::6' }] }]);
    });

    // The workaround is the dataplane's, which knows how the kernel's refusal reached it.
    it('the dataplane itself writes the replace the kernel refuses as delete, then create', async () => {
      const vxlan = { dev: 'vxlan-v6.calico', gateway: 'fd00:66::', onlink: true };
      const direct = { dev: 'eth0', gateway: 'fd00:1::6' };
      const write = (hop: typeof vxlan | typeof direct) =>
        dp!.writeRoutes([{ op: 'replace', route: { dst: 'fd00:66::/122', type: 'unicast', nextHops: [hop] } }], PODROUTE_PROTOCOL);
      assert.deepEqual(await write(vxlan), [{ ok: true }]);
      assert.deepEqual(block(), [{ dst: 'fd00:66::/122', type: 'unicast', nextHops: [vxlan] }]);
      assert.deepEqual(await write(direct), [{ ok: true }]);
      assert.deepEqual(block(), [{ dst: 'fd00:66::/122', type: 'unicast', nextHops: [direct] }]);
    });
  });
