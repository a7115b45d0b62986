// Real traffic through routes felix programmed. Three "nodes" and a router, each a network
// namespace; every node has a "pod" namespace behind a cali veth (pod /32, default route
// via 169.254.1.1 answered by proxy-ARP on the host end). Nodes A and C share 10.0.1.0/24,
// node B is in 10.0.2.0/24 behind the router. One pool, VXLAN CrossSubnet: A<->C goes
// unencapsulated, A<->B and C<->B over vxlan.calico. A felix per node, in that namespace.
import assert from 'node:assert/strict';
import { Felix, LinuxDataplane, loadNative, nativeLoadError, type FelixInput, type RemoteVtep } from '../../felix/index.js';
import { Namespaces, sh, trySh } from './netns.js';
import { cidrAddress } from '../../ip/index.js';

interface NodeSpec {
  tag: string;
  addr: string;
  gw: string;
  block: string;
  pod: string;
  vtep: string;
  mac: string;
}
const nodes: NodeSpec[] = [
  { tag: 'a', addr: '10.0.1.5/24', gw: '10.0.1.1', block: '10.65.0.0/26', pod: '10.65.0.2', vtep: '10.65.0.0', mac: '66:00:00:00:00:0a' },
  {
    tag: 'b',
    addr: '10.0.2.7/24',
    gw: '10.0.2.1',
    block: '10.65.0.64/26',
    pod: '10.65.0.66',
    vtep: '10.65.0.64',
    mac: '66:00:00:00:00:0b',
  },
  {
    tag: 'c',
    addr: '10.0.1.8/24',
    gw: '10.0.1.1',
    block: '10.65.0.128/26',
    pod: '10.65.0.130',
    vtep: '10.65.0.128',
    mac: '66:00:00:00:00:0c',
  },
];
const ip = (n: NodeSpec) => cidrAddress(n.addr);

describe('felix: pods ping each other across nodes (VXLAN CrossSubnet, real kernel)', function () {
  this.timeout(60_000);
  const spaces = new Namespaces('fxt');
  const ns: Record<string, string> = {};
  const felixes: Felix[] = [];
  const dps: LinuxDataplane[] = [];

  before(async () => {
    if (!loadNative()) throw new Error(nativeLoadError());
    const r = (ns.r = spaces.add('r'));
    sh(`ip netns exec ${r} sysctl -qw net.ipv4.ip_forward=1`);
    sh(`ip -n ${r} link add br0 type bridge && ip -n ${r} link set br0 up && ip -n ${r} addr add 10.0.1.1/24 dev br0`);
    for (const n of nodes) {
      const node = (ns[n.tag] = spaces.add(n.tag));
      const pod = (ns[`p${n.tag}`] = spaces.add(`p${n.tag}`));
      // uplink: A and C on the router's bridge (one L2 segment), B on its own link.
      sh(`ip link add fxt${process.pid}${n.tag} netns ${node} type veth peer name up${n.tag} netns ${r}`);
      sh(
        `ip -n ${node} link set fxt${process.pid}${n.tag} name eth0 && ip -n ${node} addr add ${n.addr} dev eth0 && ip -n ${node} link set eth0 up`,
      );
      if (n.tag === 'b') sh(`ip -n ${r} addr add 10.0.2.1/24 dev up${n.tag}`);
      else sh(`ip -n ${r} link set up${n.tag} master br0`);
      sh(`ip -n ${r} link set up${n.tag} up && ip -n ${node} route add default via ${n.gw}`);
      // the pod: host end cali<tag>, pod end eth0 with a /32 and the 169.254.1.1 gateway.
      sh(`ip link add cali${n.tag}${process.pid} netns ${node} type veth peer name fxtp${process.pid}${n.tag} netns ${pod}`);
      sh(`ip -n ${node} link set cali${n.tag}${process.pid} name cali${n.tag} && ip -n ${node} link set cali${n.tag} up`);
      sh(
        `ip -n ${pod} link set fxtp${process.pid}${n.tag} name eth0 && ip -n ${pod} addr add ${n.pod}/32 dev eth0 && ip -n ${pod} link set eth0 up`,
      );
      sh(`ip -n ${pod} route add 169.254.1.1 dev eth0 scope link && ip -n ${pod} route add default via 169.254.1.1 dev eth0`);
    }
    const vteps: RemoteVtep[] = nodes.map((n) => ({ nodeIp: ip(n), vtepIp: n.vtep, vtepMac: n.mac }));
    for (const n of nodes) {
      const input: FelixInput = {
        node: { addressV4: n.addr, uplink: 'eth0', vxlanTunnelAddressV4: n.vtep, vxlanTunnelMacV4: n.mac },
        workloads: [{ iface: `cali${n.tag}`, addresses: [n.pod] }],
        ownBlocks: [n.block],
        // What BGP would give: every other node's block, next hop = that node.
        remoteRoutes: nodes.filter((o) => o !== n).map((o) => ({ prefix: o.block, nextHops: [ip(o)] })),
        pools: [{ cidr: '10.65.0.0/16', vxlanMode: 'CrossSubnet' }],
        remoteVteps: vteps,
      };
      const dp = new LinuxDataplane({ netns: spaces.path(ns[n.tag]) });
      const felix = new Felix(dp, { resyncIntervalMs: 0 });
      dps.push(dp);
      felixes.push(felix);
      felix.update(input);
      const report = await felix.start();
      assert.deepEqual(report.failures, [], `node ${n.tag}: ${JSON.stringify(report.failures)}`);
      assert.deepEqual(report.sysctlFailures, []);
      assert.ok(
        report.devices.every((d) => d.ok),
        JSON.stringify(report.devices),
      );
    }
  });

  after(() => {
    for (const f of felixes) f.stop();
    for (const d of dps) d.close();
    spaces.cleanup();
  });

  const ping = (from: string, to: string) => trySh(`ip netns exec ${ns[`p${from}`]} ping -c 2 -i 0.2 -W 2 ${to}`);
  const vxlanTx = (tag: string) => Number(JSON.parse(sh(`ip -n ${ns[tag]} -j -s link show vxlan.calico`))[0].stats64.tx.packets);

  it('programs direct routes within the subnet and VXLAN routes across it', () => {
    assert.match(sh(`ip -n ${ns.a} route show 10.65.0.128/26`), /via 10\.0\.1\.8 dev eth0 proto 81/);
    assert.match(sh(`ip -n ${ns.a} route show 10.65.0.64/26`), /via 10\.65\.0\.64 dev vxlan\.calico proto 81 onlink/);
    assert.match(sh(`ip -n ${ns.b} route show 10.65.0.0/26`), /via 10\.65\.0\.0 dev vxlan\.calico proto 81 onlink/);
    assert.match(sh(`ip -n ${ns.a} route show 10.65.0.2`), /dev calia proto 81 scope link/);
    assert.match(sh(`ip -n ${ns.a} route show 10.65.0.0/26`), /blackhole 10\.65\.0\.0\/26 proto 81/);
  });

  it('pods in different subnets ping each other over VXLAN (A <-> B, C -> B)', () => {
    const before = vxlanTx('a');
    const ab = ping('a', '10.65.0.66');
    assert.ok(ab.ok, ab.out);
    assert.ok(vxlanTx('a') > before, 'A -> B went through vxlan.calico');
    const ba = ping('b', '10.65.0.2');
    assert.ok(ba.ok, ba.out);
    const cb = ping('c', '10.65.0.66');
    assert.ok(cb.ok, cb.out);
  });

  it('pods in the same subnet ping each other without encapsulation (A <-> C)', () => {
    const before = vxlanTx('a');
    const ac = ping('a', '10.65.0.130');
    assert.ok(ac.ok, ac.out);
    const ca = ping('c', '10.65.0.2');
    assert.ok(ca.ok, ca.out);
    assert.equal(vxlanTx('a'), before, 'A -> C did not touch vxlan.calico');
  });

  it("an unassigned address in a remote block is dropped by that node's blackhole", () => {
    const r = ping('a', '10.65.0.70');
    assert.equal(r.ok, false);
    // `ip route get` answers EINVAL for a blackholed address: the kernel refuses to route it.
    const get = trySh(`ip -n ${ns.b} route get 10.65.0.70`);
    assert.equal(get.ok, false);
    assert.match(get.out, /Invalid argument/);
    assert.equal(trySh(`ip -n ${ns.b} route get 10.65.0.66`).ok, true, 'the assigned pod address routes');
  });
});
