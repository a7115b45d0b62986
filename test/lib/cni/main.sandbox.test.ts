// A pod whose sandbox the runtime recreates: ADD for sandbox A, ADD for sandbox B of the same pod,
// then the calls still due for A (CHECK, DEL), through the Node plugin as a runtime runs it, in
// real namespaces against a real Redis. Each call acts only on what its container ID owns.
import assert from 'node:assert/strict';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { CONTAINER_ID_ANNOTATION } from '../../../lib/resources/index.js';
import type { Netns } from '../../support/netns.js';
import { AgentCluster, ipPool, podNetconf } from '../../support/node-agents.js';
import { callCni, type CniCall } from '../../support/cni-call.js';

interface Result {
  interfaces: { name: string }[];
  ips: { address: string }[];
}

describe('podroute-cni: a recreated sandbox (Node plugin, real Redis and kernel)', function () {
  this.timeout(120_000);
  const cluster = new AgentCluster('cnisb');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  let sock: string;
  let host: Netns;

  before(async () => {
    await cluster.open();
    ({ sock, ds } = cluster);
    await ds.create(ipPool('pods', '10.84.0.0/24', { blockSize: 28 }));
    host = await lab.namespace('host');
  });
  after(() => cluster.close());

  const conf = () => podNetconf('node-a', sock);
  const call = (command: string, env: Record<string, string>, extra: Record<string, unknown> = {}): Promise<CniCall> =>
    callCni(host, command, env, extra.prevResult ? podNetconf('node-a', sock, extra) : conf());
  const used = async () => (await new Ipam(ds).usage()).reduce((n, p) => n + p.used, 0);
  const weps = async () => (await ds.list('WorkloadEndpoint')).items;
  const sandbox = async (short: string, containerId: string) => {
    const ns = await lab.namespace(short);
    const env = {
      CNI_CONTAINERID: containerId,
      CNI_NETNS: `/var/run/netns/${ns.name}`,
      CNI_IFNAME: 'eth0',
      CNI_ARGS: 'K8S_POD_NAMESPACE=web;K8S_POD_NAME=front-0',
    };
    return { ns, env };
  };
  const hostLink = (name: string) => host.exec(['ip', '-o', 'link', 'show', 'dev', name]);

  it("the old sandbox's DEL leaves the new sandbox's endpoint, veth and address, and says so; its CHECK says whose they are", async () => {
    const a = await sandbox('sba', 'sandbox-a');
    const b = await sandbox('sbb', 'sandbox-b');
    const addA = await call('ADD', a.env);
    assert.equal(addA.code, 0, addA.stdout);
    const addB = await call('ADD', b.env);
    assert.equal(addB.code, 0, addB.stdout);
    const hostIf = (addB.json as unknown as Result).interfaces[0]!.name;
    const address = (addB.json as unknown as Result).ips[0]!.address;
    // One pod, one host veth name: B's ADD replaced A's wiring (A's eth0 went with its veth) and
    // freed A's address, which nothing can use any more.
    assert.equal((addA.json as unknown as Result).interfaces[0]!.name, hostIf);
    assert.doesNotMatch(await a.ns.ip('-o', 'link', 'show'), /eth0/, "the old sandbox's eth0 is gone with its veth");
    assert.equal(await used(), 1, 'only the new sandbox holds an address');
    assert.deepEqual(
      (await weps()).map((w) => w.metadata.annotations?.[CONTAINER_ID_ANNOTATION]),
      ['sandbox-b'],
      "the pod's one endpoint is the new sandbox's",
    );
    assert.match(addB.stderr, new RegExp(`replaced .*${hostIf}.*sandbox-a`), `B's ADD says what it replaced: ${addB.stderr}`);

    const checkA = await call('CHECK', a.env);
    assert.equal(checkA.code, 1, checkA.stdout);
    assert.equal(checkA.json?.code, 101, checkA.stdout);
    assert.match(String(checkA.json?.msg), /sandbox-b/, 'the stale CHECK names the sandbox that holds the endpoint');

    // The stale DEL, with its namespace and without (a runtime that already removed it).
    for (const env of [a.env, { ...a.env, CNI_NETNS: '' }]) {
      const delA = await call('DEL', env);
      assert.equal(delA.code, 0, delA.stdout);
      assert.match(
        delA.stderr,
        new RegExp(`left .*${hostIf}.*sandbox-b`),
        `the stale DEL says what it left and whose it is: ${delA.stderr}`,
      );
      assert.equal((await hostLink(hostIf)).code, 0, `${hostIf} is still there after A's DEL (NETNS ${JSON.stringify(env.CNI_NETNS)})`);
      assert.match(await b.ns.ip('-o', 'addr', 'show', 'dev', 'eth0'), new RegExp(`inet ${address.replace(/\./g, '\\.')} `));
      assert.equal((await weps()).length, 1, "B's endpoint is still there");
      assert.equal(await used(), 1, "B's address is still allocated");
      const checkB = await call('CHECK', b.env, { prevResult: addB.json });
      assert.equal(checkB.code, 0, checkB.stdout);
    }

    const delB = await call('DEL', b.env);
    assert.equal(delB.code, 0, delB.stdout);
    assert.notEqual((await hostLink(hostIf)).code, 0, `${hostIf} went with B's DEL`);
    assert.deepEqual(await weps(), []);
    assert.equal(await used(), 0);
  });

  it('a veth made before owners were marked is judged by the endpoint that names it', async () => {
    const a = await sandbox('sbc', 'sandbox-c');
    const b = await sandbox('sbd', 'sandbox-d');
    assert.equal((await call('ADD', a.env)).code, 0);
    const addB = await call('ADD', b.env);
    assert.equal(addB.code, 0, addB.stdout);
    const hostIf = (addB.json as unknown as Result).interfaces[0]!.name;
    // As an older plugin left it: no alias on the host end.
    await host.ip('link', 'set', 'dev', hostIf, 'alias', '');
    const delA = await call('DEL', { ...a.env, CNI_NETNS: '' });
    assert.equal(delA.code, 0, delA.stdout);
    assert.equal((await hostLink(hostIf)).code, 0, `${hostIf} is B's by its endpoint, and stays`);
    // B's own DEL, also without its namespace, takes it.
    assert.equal((await call('DEL', { ...b.env, CNI_NETNS: '' })).code, 0);
    assert.notEqual((await hostLink(hostIf)).code, 0, `${hostIf} went with B's DEL`);
    assert.equal(await used(), 0);
  });

  it('a CHECK whose host veth is now another sandbox’s fails naming it', async () => {
    const a = await sandbox('sbe', 'sandbox-e');
    const addA = await call('ADD', a.env);
    assert.equal(addA.code, 0, addA.stdout);
    const hostIf = (addA.json as unknown as Result).interfaces[0]!.name;
    await host.ip('link', 'set', 'dev', hostIf, 'alias', 'podroute-cni sandbox-z');
    const check = await call('CHECK', a.env, { prevResult: addA.json });
    assert.equal(check.json?.code, 101, check.stdout);
    assert.match(String(check.json?.msg), new RegExp(`${hostIf}.*sandbox-z`));
    // Its DEL leaves that veth (it is marked as another's) but takes its own endpoint and address.
    assert.equal((await call('DEL', { ...a.env, CNI_NETNS: '' })).code, 0);
    assert.equal((await hostLink(hostIf)).code, 0, `${hostIf} is marked as sandbox-z's and stays`);
    assert.deepEqual(await weps(), []);
    assert.equal(await used(), 0);
    await host.ip('link', 'del', 'dev', hostIf);
  });
});
