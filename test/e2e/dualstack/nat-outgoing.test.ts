// natOutgoing on an IPv6 pool, end to end: a dual-stack `podroute node run` in a namespace, a
// pod wired by the podroute-cni binary with an address of each family, and a far host outside
// every pool that has no route back to the pods. A pod's IPv6 datagram reaches the far host
// from the node's IPv6 address (masqueraded in the `inet podroute` table) and its answer comes
// back; with natOutgoing off on the pool, the far host sees nothing it could answer.
import assert from 'node:assert/strict';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { callCni } from '../../support/cni-call.js';
import type { Netns } from '../../support/netns.js';
import { AgentCluster, podNetconf } from '../../support/node-agents.js';
import type { ManagedProcess } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';
import { API_VERSION } from '../../../lib/resources/index.js';
import { cidrAddress } from '../../../ip/index.js';

const NODE6 = 'fd00:97::1';
const FAR6 = 'fd00:97::99';
const PORT = 7007;

// The far host: logs and answers each datagram with the source address it came from.
const ECHO = `const s=require('node:dgram').createSocket('udp6');s.on('message',(m,r)=>{console.log('from '+r.address);s.send(r.address,r.port,r.address)});s.bind(${PORT},'::');`;
// The pod: one datagram to the far host, prints the answer or "no answer" after a second.
const ASK = `const s=require('node:dgram').createSocket('udp6');s.on('message',(m)=>{console.log(m.toString());process.exit(0)});s.send('?',${PORT},'${FAR6}');setTimeout(()=>{console.log('no answer');process.exit(0)},1000);`;

describe('dual stack: natOutgoing on an IPv6 pool masquerades pod traffic leaving every pool (agent, CNI, real kernel)', function () {
  this.timeout(180_000);
  const cluster = new AgentCluster('nat6');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  let node: Netns;
  let far: Netns;
  let pod: Netns;
  let echo: ManagedProcess;
  let podIp6 = '';

  const pool = (name: string, cidr: string, blockSize: number, natOutgoing: boolean) => ({
    apiVersion: API_VERSION,
    kind: 'IPPool' as const,
    metadata: { name },
    spec: { cidr, blockSize, ipipMode: 'Never' as const, vxlanMode: 'Never' as const, natOutgoing },
  });
  const ask = async () => (await pod.run(['node', '-e', ASK])).trim();
  const masqueraded6 = async () => {
    const rules = await node.run(['nft', '-a', 'list', 'table', 'inet', 'podroute']);
    const m = /ip6 saddr @\S+ ip6 daddr != @\S+ counter packets (\d+)[^\n]* masquerade/.exec(rules);
    return m ? Number(m[1]) : -1;
  };

  before(async () => {
    await cluster.open();
    ds = cluster.ds;
    await ds.create(pool('pods4', '10.96.0.0/24', 26, false));
    await ds.create(pool('pods6', 'fd00:96::/120', 122, true));
    node = await lab.namespace('n1');
    far = await lab.namespace('far');
    // The far host knows only its own subnet: a pod's own address gets no answer from it.
    await lab.link(node, { ifname: 'eth0', v4: '10.97.0.1/24', v6: `${NODE6}/64` }, far, {
      ifname: 'eth0',
      v4: '10.97.0.99/24',
      v6: `${FAR6}/64`,
    });
    echo = far.spawn(['node', '-e', ECHO], { name: `echo-${Date.now()}` });
    await cluster.startAgent(node, { name: 'n1', ip: '10.97.0.1/24', ip6: `${NODE6}/64` });
    pod = await lab.namespace('pod');
    const add = await callCni(
      node,
      'ADD',
      {
        CNI_CONTAINERID: 'nat6pod1',
        CNI_NETNS: `/var/run/netns/${pod.name}`,
        CNI_IFNAME: 'eth0',
        CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=p1',
      },
      podNetconf('n1', cluster.sock, { ipam: { type: 'calico-ipam', assign_ipv4: 'true', assign_ipv6: 'true' } }),
    );
    assert.equal(add.code, 0, add.stdout);
    podIp6 = cidrAddress((add.json as { ips: { address: string }[] }).ips[1]!.address);
    assert.match(podIp6, /^fd00:96::/);
  });
  after(() => cluster.close());

  it("a pod's IPv6 datagram to an address outside every pool reaches it from the node's IPv6 address, and the answer comes back", async () => {
    // Until felix has programmed the pod's /128 and the masquerade rule, nothing comes back.
    const seen = await waitFor(ask, {
      what: 'an answer from the far host over IPv6',
      until: (a) => a !== 'no answer',
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    assert.equal(seen, NODE6, 'the far host saw the node, not the pod');
    assert.ok((await masqueraded6()) > 0, 'the IPv6 natOutgoing rule counted the packet');
  });

  it('natOutgoing off on the IPv6 pool: the datagram leaves with the pod address and no answer comes back', async () => {
    const p = (await ds.get('IPPool', 'pods6'))!;
    await ds.update({ ...p, spec: { ...p.spec, natOutgoing: false } });
    await waitFor(masqueraded6, { what: 'the IPv6 masquerade rule gone', until: (n) => n === -1, timeoutMs: 30_000, intervalMs: 250 });
    assert.equal(await ask(), 'no answer');
    // The far host did get it, from the pod's own address (it just has no route back).
    assert.ok(echo.tail().includes(`from ${podIp6}`), echo.tail());
  });
});
