// Dual stack in the CNI plugin, run as a container runtime runs it (the podroute-cni binary,
// CNI_* in its environment, the netconf on stdin) in a "host" namespace against a real Redis:
// one ADD gets an address of each family, both on the pod's eth0 with a default route per
// family; a failure of either family leaves neither allocated; DEL frees both.
import assert from 'node:assert/strict';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { callCni } from '../../support/cni-call.js';
import type { Netns } from '../../support/netns.js';
import { AgentCluster, ipPool, podNetconf } from '../../support/node-agents.js';
import { cidrAddress } from '../../../ip/index.js';

const GW6 = 'fe80::ecee:eeff:feee:eeee';

interface Result {
  cniVersion: string;
  ips: { address: string; gateway?: string; interface?: number; version?: string }[];
  interfaces: { name: string; mac?: string; sandbox?: string }[];
  routes: { dst: string; gw?: string }[];
}

describe('podroute-cni dual stack (IPv4 and IPv6 pools, real Redis, real kernel)', function () {
  this.timeout(180_000);
  const cluster = new AgentCluster('cni6');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  let host: Netns;
  let sock: string;
  const conf = (ipam: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}) =>
    podNetconf('node-a', sock, { ...(ipam ? { ipam } : {}), ...extra });
  const dual = { type: 'calico-ipam', assign_ipv4: 'true', assign_ipv6: 'true' };
  const pool = (name: string, cidr: string, blockSize: number) => ds.create(ipPool(name, cidr, { blockSize }));

  before(async () => {
    await cluster.open();
    ({ sock, ds } = cluster);
    await pool('pods4', '10.90.0.0/24', 26);
    // /122: Calico's IPv6 block size, and the default podroute apply gives an IPv6 pool.
    await pool('pods6', 'fd00:5a::/120', 122);
    host = await lab.namespace('host');
    // Links born in the host namespace start with IPv6 off: the plugin must turn it on for its veth.
    await host.run(['sysctl', '-qw', 'net.ipv6.conf.default.disable_ipv6=1']);
  });
  after(() => cluster.close());

  const links = async () => (await host.ip('-o', 'link', 'show')).split('\n').filter((l) => / cali[0-9a-f]{11}[@:]/.test(l));
  const weps = async () => (await ds.list('WorkloadEndpoint')).items;
  const usedIn = async (name: string) => (await new Ipam(ds).usage()).find((p) => p.name === name)?.used ?? 0;
  const used = async () => (await new Ipam(ds).usage()).reduce((n, p) => n + p.used, 0);
  const podEnv = (pod: Netns, id: string) => ({ CNI_CONTAINERID: id, CNI_NETNS: `/var/run/netns/${pod.name}`, CNI_IFNAME: 'eth0' });
  const globalAddresses = async (pod: Netns) =>
    [...(await pod.ip('-o', 'addr', 'show', 'dev', 'eth0', 'scope', 'global')).matchAll(/inet6? (\S+)/g)].map((m) => m[1]);

  it('one ADD gives eth0 an address of each family and a default route per family; ping -6 works both ways; DEL frees both', async () => {
    const pod = await lab.namespace('dual');
    // A pod namespace with IPv6 off as well: the plugin turns it on where the pod's address goes.
    await pod.run(['sysctl', '-qw', 'net.ipv6.conf.all.disable_ipv6=1', 'net.ipv6.conf.default.disable_ipv6=1']);
    const env = { ...podEnv(pod, 'dual0001'), CNI_ARGS: 'K8S_POD_NAMESPACE=web;K8S_POD_NAME=front-0' };
    const add = await callCni(host, 'ADD', env, conf(dual));
    assert.equal(add.code, 0, add.stdout);
    const r = add.json as unknown as Result;
    assert.equal(r.ips.length, 2, add.stdout);
    const [v4, v6] = [r.ips[0]!.address, r.ips[1]!.address];
    assert.match(v4, /^10\.90\.0\.\d+\/32$/);
    assert.match(v6, /^fd00:5a::[0-9a-f]*\/128$/);
    assert.deepEqual(
      r.ips.map((i) => [i.gateway, i.interface, 'version' in i]),
      [
        ['169.254.1.1', 1, false],
        [GW6, 1, false],
      ],
    );
    assert.deepEqual(r.routes, [
      { dst: '0.0.0.0/0', gw: '169.254.1.1' },
      { dst: '::/0', gw: GW6 },
    ]);
    const hostIf = r.interfaces[0]!.name;

    // The pod: both addresses on eth0, a default route per family, the gateway's MAC pinned.
    assert.deepEqual((await globalAddresses(pod)).sort(), [v4, v6].sort());
    assert.match(await pod.ip('-4', 'route', 'show', 'default'), /^default via 169\.254\.1\.1 dev eth0/);
    assert.match(await pod.ip('-6', 'route', 'show', 'default'), new RegExp(`^default via ${GW6} dev eth0`));
    assert.match(await pod.ip('-6', 'neigh', 'show', 'dev', 'eth0'), new RegExp(`^${GW6} lladdr ee:ee:ee:ee:ee:ee PERMANENT`, 'm'));
    // The host end: IPv6 on, and the gateway is its own link-local address (EUI-64 of ee:ee:ee:ee:ee:ee).
    assert.equal((await host.run(['cat', `/proc/sys/net/ipv6/conf/${hostIf}/disable_ipv6`])).trim(), '0');
    assert.match(await host.ip('-6', 'addr', 'show', 'dev', hostIf, 'scope', 'link'), new RegExp(`inet6 ${GW6}/64`));

    // The store: one endpoint with both networks, one address in each pool, the IPv6 block a /122.
    const [wep] = await weps();
    assert.deepEqual(wep!.spec.ipNetworks, [v4, v6]);
    assert.equal(wep!.spec.interfaceName, hostIf);
    assert.equal(await usedIn('pods4'), 1);
    assert.equal(await usedIn('pods6'), 1);
    const blocks6 = (await ds.list('IPAMBlock')).items.filter((b) => b.spec.cidr.includes(':'));
    assert.equal(blocks6.length, 1);
    assert.match(blocks6[0]!.spec.cidr, /^fd00:5a::([0-9a-f]+)?\/122$/);
    assert.equal(blocks6[0]!.spec.affinity, 'host:node-a');

    // The node agent's part, done here by hand: the /128 to the pod via its veth.
    await host.ip('-6', 'addr', 'add', 'fd00:99::1/128', 'dev', 'lo');
    await host.ip('-6', 'route', 'add', v6, 'dev', hostIf);
    const podIp6 = cidrAddress(v6);
    const toPod = await host.exec(['ping', '-6', '-c', '2', '-i', '0.2', '-W', '3', podIp6], { timeoutMs: 15_000 });
    assert.equal(toPod.code, 0, `host -> pod: ${toPod.stdout}${toPod.stderr}`);
    const fromPod = await pod.exec(['ping', '-6', '-c', '2', '-i', '0.2', '-W', '3', 'fd00:99::1'], { timeoutMs: 15_000 });
    assert.equal(fromPod.code, 0, `pod -> host: ${fromPod.stdout}${fromPod.stderr}`);
    assert.match(fromPod.stdout, /2 received/);

    // CHECK agrees with what ADD made, and notices the IPv6 default route going.
    assert.equal((await callCni(host, 'CHECK', env, conf(dual, { prevResult: add.json }))).code, 0);
    await pod.ip('-6', 'route', 'del', 'default');
    const bad = await callCni(host, 'CHECK', env, conf(dual));
    assert.equal(bad.json?.code, 101, bad.stdout);
    assert.match(String(bad.json?.msg), /IPv6 default route/);

    assert.equal((await callCni(host, 'DEL', env, conf(dual))).code, 0);
    assert.deepEqual(await links(), []);
    assert.deepEqual(await weps(), []);
    assert.equal(await used(), 0);
  });

  it('CNI 0.3.1 and 0.4.0 results name each address family ("4", "6"); 1.1.0 does not', async () => {
    for (const [i, version] of ['0.3.1', '0.4.0', '1.1.0'].entries()) {
      const pod = await lab.namespace(`ver${i}`);
      const env = podEnv(pod, `dualver${i}`);
      const add = await callCni(host, 'ADD', env, conf(dual, { cniVersion: version }));
      assert.equal(add.code, 0, `${version}: ${add.stdout}`);
      const r = add.json as unknown as Result;
      assert.equal(r.cniVersion, version);
      assert.deepEqual(
        r.ips.map((ip) => ip.version),
        version < '1.0.0' ? ['4', '6'] : [undefined, undefined],
        version,
      );
      assert.equal((await callCni(host, 'DEL', env, conf(dual, { cniVersion: version }))).code, 0, version);
    }
    assert.equal(await used(), 0);
  });

  it('a v4-only and a v6-only netconf still work', async () => {
    // No ipam section: IPv4 only, as in Calico (assign_ipv4 defaults to "true", assign_ipv6 to "false").
    const p4 = await lab.namespace('only4');
    const e4 = podEnv(p4, 'only4');
    const a4 = await callCni(host, 'ADD', e4, conf(undefined));
    assert.equal(a4.code, 0, a4.stdout);
    const r4 = a4.json as unknown as Result;
    assert.deepEqual(
      r4.ips.map((i) => i.address.includes(':')),
      [false],
    );
    assert.deepEqual(r4.routes, [{ dst: '0.0.0.0/0', gw: '169.254.1.1' }]);
    assert.deepEqual(await globalAddresses(p4), [r4.ips[0]!.address]);
    assert.equal((await p4.ip('-6', 'route', 'show', 'default')).trim(), '');
    assert.equal(await usedIn('pods6'), 0);

    const p6 = await lab.namespace('only6');
    const e6 = podEnv(p6, 'only6');
    const v6only = { type: 'calico-ipam', assign_ipv4: 'false', assign_ipv6: 'true' };
    const a6 = await callCni(host, 'ADD', e6, conf(v6only, { cniVersion: '0.3.1' }));
    assert.equal(a6.code, 0, a6.stdout);
    const r6 = a6.json as unknown as Result;
    assert.deepEqual(r6.ips, [{ address: r6.ips[0]!.address, gateway: GW6, interface: 1, version: '6' }]);
    assert.match(r6.ips[0]!.address, /^fd00:5a::[0-9a-f]*\/128$/);
    assert.deepEqual(r6.routes, [{ dst: '::/0', gw: GW6 }]);
    assert.deepEqual(await globalAddresses(p6), [r6.ips[0]!.address]);
    assert.equal((await p6.ip('-4', 'route', 'show', 'default')).trim(), '');
    assert.match(await p6.ip('-6', 'route', 'show', 'default'), new RegExp(`^default via ${GW6} dev eth0`));
    assert.equal(await usedIn('pods4'), 1);
    assert.equal(await usedIn('pods6'), 1);
    assert.equal((await callCni(host, 'CHECK', e6, conf(v6only, { cniVersion: '0.4.0', prevResult: a6.json }))).code, 0);

    assert.equal((await callCni(host, 'DEL', e4, conf(undefined))).code, 0);
    assert.equal((await callCni(host, 'DEL', e6, conf(v6only))).code, 0);
    assert.deepEqual(await links(), []);
    assert.equal(await used(), 0);
  });

  it('bad ipam settings are refused naming the field, before anything is allocated', async () => {
    const pod = await lab.namespace('badipam');
    const env = podEnv(pod, 'badipam1');
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ assign_ipv6: 'yes' }, /ipam\.assign_ipv6/],
      [{ assign_ipv4: 'false' }, /ipam\.assign_ipv4/],
      [{ assign_ipv6: 'true', ipv6_pool: ['pods6'] }, /ipam\.ipv6_pool: unknown field/],
      [{ assign_ipv6: 'true', ipv6_pools: 'pods6' }, /ipam\.ipv6_pools/],
    ];
    for (const [ipam, msg] of cases) {
      const r = await callCni(host, 'ADD', env, conf({ type: 'calico-ipam', ...ipam }));
      assert.equal(r.code, 1, JSON.stringify(ipam));
      assert.equal(r.json?.code, 7, r.stdout);
      assert.match(String(r.json?.msg), msg);
    }
    // An IPv4 pool named for IPv6: the IPv4 address already taken is given back.
    const wrong = await callCni(host, 'ADD', env, conf({ ...dual, ipv6_pools: ['pods4'] }));
    assert.equal(wrong.code, 1);
    assert.match(String(wrong.json?.msg), /pods4.*is not IPv6/, wrong.stdout);
    assert.deepEqual(await links(), []);
    assert.equal(await used(), 0);
  });

  it('an exhausted IPv6 pool fails the ADD with code 100 and leaves no IPv4 address, veth or endpoint', async () => {
    // Four addresses in one /126 block, all taken by others.
    await pool('tiny6', 'fd00:5b::/126', 126);
    const ipam = new Ipam(ds);
    for (let i = 0; i < 4; i++) await ipam.autoAssign({ handle: `other${i}`, node: 'node-b', family: 6, pools: ['tiny6'] });
    assert.equal(await usedIn('tiny6'), 4);
    const pod = await lab.namespace('full6');
    const env = podEnv(pod, 'full6');
    // Pools per family as Calico names them: by name for IPv4, by CIDR for IPv6.
    const full = { ...dual, ipv4_pools: ['pods4'], ipv6_pools: ['fd00:5b::/126'] };
    const r = await callCni(host, 'ADD', env, conf(full));
    assert.equal(r.code, 1);
    assert.equal(r.json?.code, 100, r.stdout);
    assert.match(String(r.json?.msg), /IPv6/);
    assert.equal(await usedIn('pods4'), 0, 'the IPv4 address taken first is released');
    assert.equal(await usedIn('tiny6'), 4);
    assert.deepEqual(await links(), []);
    assert.deepEqual(await weps(), []);
    assert.equal((await pod.ip('-o', 'link', 'show')).includes('eth0'), false, 'no eth0 left in the pod');

    // A freed address makes the same ADD work, and DEL gives both back.
    await ipam.releaseByHandle('other0');
    const ok = await callCni(host, 'ADD', env, conf(full));
    assert.equal(ok.code, 0, ok.stdout);
    const addrs = (ok.json as unknown as Result).ips.map((i) => i.address);
    assert.match(addrs[1]!, /^fd00:5b::[0-3]?\/128$/);
    assert.equal(await usedIn('pods4'), 1);
    assert.equal(await usedIn('tiny6'), 4);
    assert.equal((await callCni(host, 'DEL', env, conf(full))).code, 0);
    assert.equal(await usedIn('pods4'), 0);
    assert.equal(await usedIn('tiny6'), 3);
    for (let i = 1; i < 4; i++) await ipam.releaseByHandle(`other${i}`);
    assert.equal(await used(), 0);
    assert.deepEqual(await links(), []);
  });
});
