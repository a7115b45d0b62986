// The CNI plugin run exactly as a container runtime runs it: the podroute-cni binary with
// CNI_* in its environment and the network configuration on stdin, in a "host" namespace,
// against a real Redis (over a Unix socket, reachable from any namespace).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { CONTAINER_ID_ANNOTATION, API_VERSION } from '../../../lib/resources/index.js';
import type { Netns } from '../../support/netns.js';
import { AgentCluster, ipPool } from '../../support/node-agents.js';
import { callCni } from '../../support/cni-call.js';

describe('podroute-cni (CNI 1.0) against a real Redis', function () {
  this.timeout(120_000);
  const cluster = new AgentCluster('cni');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  let host: Netns;
  let sock: string;
  const conf = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'k8s-pod-network',
      type: 'podroute-cni',
      nodename: 'node-a',
      datastore: { type: 'redis', url: sock },
      ...extra,
    });

  before(async () => {
    await cluster.open();
    ({ sock, ds } = cluster);
    await ds.create(ipPool('pods', '10.80.0.0/24'));
    host = await lab.namespace('host');
  });
  after(() => cluster.close());

  const links = async () => (await host.ip('-o', 'link', 'show')).split('\n').filter((l) => / cali[0-9a-f]{11}[@:]/.test(l));
  const weps = async () => (await ds.list('WorkloadEndpoint')).items;
  const used = async () => (await new Ipam(ds).usage()).reduce((n, p) => n + p.used, 0);

  it('VERSION lists the versions it speaks', async () => {
    const r = await callCni(host, 'VERSION', {}, '{"cniVersion":"1.0.0"}');
    assert.equal(r.code, 0);
    assert.deepEqual(r.json, { cniVersion: '1.0.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] });
  });

  it('speaks every version as that version: the result shape, CHECK from 0.4.0', async () => {
    for (const [i, version] of ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'].entries()) {
      const pod = await lab.namespace(`v${i}`);
      const env = { CNI_CONTAINERID: `ver0${i}`, CNI_NETNS: `/var/run/netns/${pod.name}`, CNI_IFNAME: 'eth0' };
      const add = await callCni(host, 'ADD', env, conf({ cniVersion: version }));
      assert.equal(add.code, 0, `${version}: ${add.stdout}`);
      const result = add.json as { cniVersion: string; ips: Record<string, unknown>[]; interfaces: { sandbox?: string }[] };
      assert.equal(result.cniVersion, version);
      const ip = result.ips[0]!;
      // 0.3.x and 0.4.0 name the family of each IP; 1.0.0 dropped the field.
      if (version < '1.0.0') assert.equal(ip.version, '4', version);
      else assert.equal('version' in ip, false, version);
      assert.equal(ip.interface, 1, version);
      assert.equal(result.interfaces[1]!.sandbox, env.CNI_NETNS);
      const check = await callCni(host, 'CHECK', env, conf({ cniVersion: version, prevResult: add.json }));
      if (version < '0.4.0') {
        // CHECK came with 0.4.0: before it, the spec's "incompatible CNI version".
        assert.equal(check.code, 1, version);
        assert.equal(check.json?.code, 1, check.stdout);
        assert.equal(check.json?.cniVersion, version);
      } else assert.equal(check.code, 0, `${version}: ${check.stdout}`);
      assert.equal((await callCni(host, 'DEL', env, conf({ cniVersion: version }))).code, 0, version);
    }
    assert.deepEqual(await links(), []);
    assert.deepEqual(await weps(), []);
    assert.equal(await used(), 0);
  });

  it('CNI 1.1: STATUS says whether an ADD can work; GC removes what the runtime no longer holds', async () => {
    const v11 = (extra: Record<string, unknown> = {}) => conf({ cniVersion: '1.1.0', ...extra });
    assert.equal((await callCni(host, 'STATUS', {}, v11())).code, 0);
    const down = await callCni(host, 'STATUS', {}, v11({ datastore: { type: 'redis', url: join(lab.dir, 'no-redis.sock') } }));
    assert.equal(down.code, 1);
    assert.equal(down.json?.code, 50, down.stdout);
    const old = await callCni(host, 'STATUS', {}, conf());
    assert.equal(old.json?.code, 1, old.stdout);

    const pods = await Promise.all(['gc-keep', 'gc-gone'].map((n) => lab.namespace(n)));
    const envs = pods.map((p, i) => ({ CNI_CONTAINERID: `gc0${i}`, CNI_NETNS: `/var/run/netns/${p.name}`, CNI_IFNAME: 'eth0' }));
    for (const env of envs) assert.equal((await callCni(host, 'ADD', env, v11())).code, 0);
    assert.equal((await links()).length, 2);
    // Another node's endpoint is none of this node's business.
    await ds.apply({
      apiVersion: API_VERSION,
      kind: 'WorkloadEndpoint',
      metadata: { name: 'node--b-k8s-other-eth0', namespace: 'default', annotations: { [CONTAINER_ID_ANNOTATION]: 'elsewhere' } },
      spec: { node: 'node-b', pod: 'other', interfaceName: 'cali00000000000', ipNetworks: [] },
    });
    const gc = await callCni(host, 'GC', {}, v11({ 'cni.dev/valid-attachments': [{ containerID: 'gc00', ifname: 'eth0' }] }));
    assert.equal(gc.code, 0, gc.stdout);
    const left = await weps();
    assert.deepEqual(left.map((w) => w.spec.node).sort(), ['node-a', 'node-b']);
    assert.equal((await links()).length, 1);
    assert.equal(await used(), 1);
    const noList = await callCni(host, 'GC', {}, v11());
    assert.equal(noList.json?.code, 7, noList.stdout);
    assert.equal((await callCni(host, 'DEL', envs[0]!, v11())).code, 0);
    await ds.delete('WorkloadEndpoint', 'default/node--b-k8s-other-eth0');
    assert.deepEqual(await links(), []);
    assert.equal(await used(), 0);
  });

  it('ADD wires the pod, CHECK agrees, DEL removes everything and is idempotent', async () => {
    const pod = await lab.namespace('pod1');
    const env = {
      CNI_CONTAINERID: 'c0ffee01',
      CNI_NETNS: `/var/run/netns/${pod.name}`,
      CNI_IFNAME: 'eth0',
      CNI_ARGS: 'K8S_POD_NAMESPACE=web;K8S_POD_NAME=front-0',
      CNI_PATH: '/opt/cni/bin',
    };
    const add = await callCni(host, 'ADD', env, conf());
    assert.equal(add.code, 0, add.stdout);
    const result = add.json as {
      ips: { address: string; gateway: string }[];
      interfaces: { name: string; mac: string; sandbox?: string }[];
      routes: { dst: string; gw: string }[];
    };
    const address = result.ips[0]!.address;
    assert.match(address, /^10\.80\.0\.\d+\/32$/);
    assert.equal(result.ips[0]!.gateway, '169.254.1.1');
    assert.deepEqual(result.routes, [{ dst: '0.0.0.0/0', gw: '169.254.1.1' }]);
    const hostIf = result.interfaces[0]!.name;
    assert.match(hostIf, /^cali[0-9a-f]{11}$/);
    assert.equal(result.interfaces[1]!.sandbox, env.CNI_NETNS);
    // Pod side: the /32 and the default route via the link-local gateway.
    assert.match(await pod.ip('-o', '-4', 'addr', 'show', 'dev', 'eth0'), new RegExp(`inet ${address.replace(/\./g, '\\.')} `));
    assert.match(await pod.ip('route', 'show', 'default'), /default via 169\.254\.1\.1 dev eth0/);
    // Host side: proxy-ARP answers for 169.254.1.1.
    assert.equal((await host.run(['cat', `/proc/sys/net/ipv4/conf/${hostIf}/proxy_arp`])).trim(), '1');
    // Both ends up, and the result names each end's MAC as the kernel has it.
    assert.match(await host.ip('-o', 'link', 'show', 'dev', hostIf), /[<,]UP[,>].*link\/ether ee:ee:ee:ee:ee:ee /);
    const podLink = await pod.ip('-o', 'link', 'show', 'dev', 'eth0');
    assert.match(podLink, /[<,]UP[,>]/);
    assert.equal(result.interfaces[0]!.mac, 'ee:ee:ee:ee:ee:ee');
    assert.equal(result.interfaces[1]!.mac, /link\/ether ([0-9a-f:]{17})/.exec(podLink)?.[1]);
    const [wep] = await weps();
    assert.equal(wep!.metadata.namespace, 'web');
    assert.equal(wep!.spec.interfaceName, hostIf);
    assert.deepEqual(wep!.spec.ipNetworks, [address]);
    assert.equal(wep!.spec.node, 'node-a');
    assert.equal(await used(), 1);

    assert.equal((await callCni(host, 'CHECK', env, conf({ prevResult: add.json }))).code, 0);
    // CHECK notices a missing address.
    await pod.ip('addr', 'del', address, 'dev', 'eth0');
    const bad = await callCni(host, 'CHECK', env, conf());
    assert.equal(bad.code, 1);
    assert.equal(bad.json?.code, 101);

    assert.equal((await callCni(host, 'DEL', env, conf())).code, 0);
    assert.deepEqual(await links(), []);
    assert.deepEqual(await weps(), []);
    assert.equal(await used(), 0);
    // Again, and with the pod's namespace gone: still success.
    assert.equal((await callCni(host, 'DEL', env, conf())).code, 0);
    assert.equal((await callCni(host, 'DEL', { ...env, CNI_NETNS: '' }, conf())).code, 0);
  });

  it("puts the pod's labels (args.cni.labels) and named ports on its WorkloadEndpoint, with Calico's own labels", async () => {
    const pod = await lab.namespace('pod-labels');
    const env = {
      CNI_CONTAINERID: 'label01',
      CNI_NETNS: `/var/run/netns/${pod.name}`,
      CNI_IFNAME: 'eth0',
      CNI_ARGS: 'K8S_POD_NAMESPACE=x;K8S_POD_NAME=a',
    };
    const args = {
      cni: {
        labels: [
          { key: 'pod', value: 'a' },
          { key: 'app.kubernetes.io/name', value: 'web' },
          // A pod cannot claim another namespace: Calico's label wins.
          { key: 'projectcalico.org/namespace', value: 'y' },
        ],
        ports: [{ name: 'serve-80-tcp', protocol: 'TCP', port: 80 }],
        // Keys the plugin does not know are left for others, as the conventions say.
        ips: ['10.80.0.99'],
      },
    };
    const add = await callCni(host, 'ADD', env, conf({ args }));
    assert.equal(add.code, 0, add.stdout);
    const [wep] = await weps();
    assert.equal(wep!.metadata.namespace, 'x');
    assert.equal(wep!.spec.pod, 'a');
    assert.deepEqual(wep!.metadata.labels, {
      pod: 'a',
      'app.kubernetes.io/name': 'web',
      'projectcalico.org/namespace': 'x',
      'projectcalico.org/orchestrator': 'k8s',
    });
    assert.deepEqual(wep!.spec.ports, [{ name: 'serve-80-tcp', protocol: 'TCP', port: 80 }]);
    assert.equal((await callCni(host, 'DEL', env, conf())).code, 0);
    assert.deepEqual(await weps(), []);
    // A label that is no Kubernetes label is refused before anything is made, naming the entry.
    const bad = await callCni(host, 'ADD', env, conf({ args: { cni: { labels: [{ key: 'pod', value: 'not ok' }] } } }));
    assert.equal(bad.code, 1);
    assert.equal(bad.json?.code, 7, bad.stdout);
    assert.match(String(bad.json?.msg), /args\.cni\.labels\[0\]\.value/);
    const badPort = await callCni(host, 'ADD', env, conf({ args: { cni: { ports: [{ name: 'http', protocol: 'ICMP', port: 80 }] } } }));
    assert.equal(badPort.json?.code, 7, badPort.stdout);
    assert.match(String(badPort.json?.msg), /args\.cni\.ports\[0\]\.protocol/);
    assert.deepEqual(await links(), []);
    assert.equal(await used(), 0);
  });

  it('bad input gets the spec error codes and leaves no address, veth or endpoint', async () => {
    const pod = await lab.namespace('pod2');
    const env = { CNI_CONTAINERID: 'bad01', CNI_NETNS: `/var/run/netns/${pod.name}`, CNI_IFNAME: 'eth0' };
    const cases: [string, Record<string, string>, string, number][] = [
      ['bad JSON', env, '{"cniVersion": "1.0.0", ', 6],
      ['no netns', { ...env, CNI_NETNS: '' }, conf(), 4],
      ['netns that does not exist', { ...env, CNI_NETNS: '/var/run/netns/none-such' }, conf(), 3],
      ['no container ID', { ...env, CNI_CONTAINERID: '' }, conf(), 4],
      ['unsupported version', env, conf({ cniVersion: '9.9.9' }), 1],
      ['config without a name', env, JSON.stringify({ cniVersion: '1.0.0', type: 'podroute-cni' }), 7],
    ];
    for (const [what, e, stdin, code] of cases) {
      const r = await callCni(host, 'ADD', e, stdin);
      assert.equal(r.code, 1, what);
      assert.equal(r.json?.code, code, `${what}: ${r.stdout}`);
      assert.equal(typeof r.json?.msg, 'string', what);
    }
    assert.deepEqual(await links(), []);
    assert.deepEqual(await weps(), []);
    assert.equal(await used(), 0);
  });

  it('an exhausted pool fails with code 100 and leaves nothing half-done', async () => {
    // Only this pool, 4 addresses: a /30 block.
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'tiny' },
      spec: { cidr: '10.81.0.0/30', blockSize: 30, ipipMode: 'Never', vxlanMode: 'Never' },
    });
    const made: Record<string, string>[] = [];
    for (let i = 0; i < 4; i++) {
      const pod = await lab.namespace(`t${i}`);
      const env = { CNI_CONTAINERID: `tiny${i}`, CNI_NETNS: `/var/run/netns/${pod.name}`, CNI_IFNAME: 'eth0' };
      assert.equal((await callCni(host, 'ADD', env, conf({ ipam: { pools: ['tiny'] } }))).code, 0);
      made.push(env);
    }
    const pod = await lab.namespace('t4');
    const env = { CNI_CONTAINERID: 'tiny4', CNI_NETNS: `/var/run/netns/${pod.name}`, CNI_IFNAME: 'eth0' };
    const r = await callCni(host, 'ADD', env, conf({ ipam: { pools: ['tiny'] } }));
    assert.equal(r.code, 1);
    assert.equal(r.json?.code, 100, r.stdout);
    assert.equal((await links()).length, 4);
    assert.equal((await weps()).length, 4);
    assert.equal(await used(), 4);
    assert.equal((await pod.ip('-o', 'link', 'show')).includes('eth0'), false, 'no eth0 left in the pod');
    for (const e of made) assert.equal((await callCni(host, 'DEL', e, conf())).code, 0);
    assert.equal(await used(), 0);
    assert.deepEqual(await links(), []);
  });
});
