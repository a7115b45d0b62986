// `podroute ipam check` run on a node compares that node's WorkloadEndpoints with its kernel: a
// pod wired by the plugin in real namespaces, then its address or its host veth taken away
// behind the store's back, as a stale sandbox's DEL used to.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import type { IpamCheckReport } from '../../../lib/ipam/index.js';
import { API_VERSION } from '../../../lib/resources/index.js';
import type { Netns } from '../../support/netns.js';
import { AgentCluster, ipPool, podNetconf, ROOT } from '../../support/node-agents.js';
import { callCni, podEnv } from '../../support/cni-call.js';

interface Result {
  interfaces: { name: string }[];
  ips: { address: string }[];
}

describe("ipam check against a node's kernel (real namespaces and Redis)", function () {
  // Each check is a `podroute` process started in the node's namespace.
  this.timeout(300_000);
  const cluster = new AgentCluster('ipamk');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  let sock: string;
  let host: Netns;

  before(async () => {
    await cluster.open();
    ({ sock, ds } = cluster);
    await ds.create(ipPool('pods', '10.85.0.0/24', { blockSize: 28 }));
    await ds.create({ apiVersion: API_VERSION, kind: 'Node', metadata: { name: 'node-k' }, spec: {} });
    host = await lab.namespace('host');
  });
  after(() => cluster.close());

  /** `podroute ipam check` in the node's namespace, as its operator runs it there; `-o json` unless `text`. */
  const check = async (flags: string[], text = false) => {
    const r = await host.exec(
      ['node', join(ROOT, 'bin/podroute.js'), 'ipam', 'check', '--datastore', sock, ...(text ? [] : ['-o', 'json']), ...flags],
      { timeoutMs: 60_000 },
    );
    return { code: r.code, report: text ? undefined : (JSON.parse(r.stdout) as IpamCheckReport), text: r.stdout + r.stderr };
  };

  it("reports an endpoint whose addresses or host interface the node's kernel lacks", async () => {
    const pod = { name: 'web-0', containerId: 'kern01', ns: await lab.namespace('pod') };
    const add = await callCni(host, 'ADD', podEnv(pod), podNetconf('node-k', sock));
    assert.equal(add.code, 0, add.stdout);
    const hostIf = (add.json as unknown as Result).interfaces[0]!.name;
    const address = (add.json as unknown as Result).ips[0]!.address;

    const whole = await check(['--node', 'node-k'], true);
    assert.equal(whole.code, 0, whole.text);
    assert.match(whole.text, /kernel: 1 endpoints of node node-k compared with this host's interfaces\nno problems found/);
    // Elsewhere (no --node, and this host is not node-k), nothing is compared with the kernel.
    const elsewhere = await check([]);
    assert.equal(elsewhere.report?.kernel, undefined, elsewhere.text);

    await pod.ns.ip('addr', 'del', address, 'dev', 'eth0');
    const noAddress = await check(['--node', 'node-k']);
    assert.equal(noAddress.code, 1, noAddress.text);
    assert.deepEqual(
      noAddress.report?.kernel?.missingAddresses.map((m) => [m.interfaceName, m.missing]),
      [[hostIf, [address]]],
    );
    assert.match(
      (await check(['--node', 'node-k'], true)).text,
      new RegExp(`missing addresses: WorkloadEndpoint .*: ${address} not on the pod end of ${hostIf} \\(it has none\\)`),
    );

    await host.ip('link', 'del', 'dev', hostIf);
    const noInterface = await check(['--node', 'node-k'], true);
    assert.equal(noInterface.code, 1, noInterface.text);
    assert.match(noInterface.text, new RegExp(`missing interface: WorkloadEndpoint .* names ${hostIf}, which this host does not have`));
    assert.match(noInterface.text, /problems found: an endpoint the kernel lacks comes back when its pod's sandbox is recreated/);

    assert.equal((await callCni(host, 'DEL', podEnv(pod), podNetconf('node-k', sock))).code, 0);
    assert.equal((await check(['--node', 'node-k'])).code, 0);
  });

  it('reports a host interface marked as another sandbox’s', async () => {
    const pod = { name: 'web-1', containerId: 'kern02', ns: await lab.namespace('pod2') };
    const add = await callCni(host, 'ADD', podEnv(pod), podNetconf('node-k', sock));
    assert.equal(add.code, 0, add.stdout);
    const hostIf = (add.json as unknown as Result).interfaces[0]!.name;
    await host.ip('link', 'set', 'dev', hostIf, 'alias', 'podroute-cni kern99');
    const r = await check(['--node', 'node-k']);
    assert.equal(r.code, 1, r.text);
    assert.deepEqual(
      r.report?.kernel?.otherOwner.map((o) => [o.interfaceName, o.container, o.owner]),
      [[hostIf, 'kern02', 'kern99']],
    );
    assert.match(
      (await check(['--node', 'node-k'], true)).text,
      new RegExp(`interface of another sandbox: ${hostIf} of WorkloadEndpoint .* is marked as container kern99's, not kern02's`),
    );
    await host.ip('link', 'set', 'dev', hostIf, 'alias', 'podroute-cni kern02');
    assert.equal((await callCni(host, 'DEL', podEnv(pod), podNetconf('node-k', sock))).code, 0);
  });
});
