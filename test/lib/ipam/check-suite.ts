// `podroute ipam check` finds each kind of problem, and `ipam repair` fixes what it can, on
// any backend.
import assert from 'node:assert/strict';
import { runDatastoreCommand } from '../../../lib/cli/datastore.js';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam, type IpamCheckReport } from '../../../lib/ipam/index.js';
import { API_VERSION, type IPAMBlock, type Node, type WorkloadEndpoint } from '../../../lib/resources/index.js';

const node = (name: string): Node => ({ apiVersion: API_VERSION, kind: 'Node', metadata: { name }, spec: {} });
const wep = (name: string, nodeName: string, ip: string): WorkloadEndpoint => ({
  apiVersion: API_VERSION,
  kind: 'WorkloadEndpoint',
  metadata: { name, namespace: 'default', annotations: { 'podroute.io/container-id': name } },
  spec: { node: nodeName, pod: name, workload: name, interfaceName: `cali-${name}`.slice(0, 15), ipNetworks: [`${ip}/32`] },
});

export function ipamCheckSuite(open: () => Promise<BackendDatastore>): void {
  let ds: BackendDatastore;
  beforeEach(async () => {
    ds = await open();
  });
  afterEach(async () => {
    await ds?.close();
  });

  async function check(): Promise<{ code: number; report: IpamCheckReport; text: string }> {
    const out: string[] = [];
    const io = { stdout: (s: string) => out.push(s), stderr: (s: string) => out.push(s) };
    const code = await runDatastoreCommand(['ipam', 'check', '-o', 'json'], io, ds);
    const textOut: string[] = [];
    await runDatastoreCommand(['ipam', 'check'], { stdout: (s) => textOut.push(s), stderr: (s) => textOut.push(s) }, ds);
    return { code, report: JSON.parse(out.join('')) as IpamCheckReport, text: textOut.join('') };
  }

  it('reports leaked, doubly-held and orphaned addresses and stale affinities, and repair rebuilds the allocations', async () => {
    await ds.apply({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'p' },
      spec: { cidr: '10.30.0.0/24', blockSize: 28, ipipMode: 'Never', vxlanMode: 'Never' },
    });
    await ds.apply(node('n1'));
    await ds.apply(node('gone'));
    const ipam = new Ipam(ds);
    const held = await ipam.autoAssign({ handle: 'a', node: 'n1' });
    await ds.apply(wep('a', 'n1', held.ip));
    const leaked = await ipam.autoAssign({ handle: 'leak', node: 'n1' });
    const stale = await ipam.autoAssign({ handle: 'g', node: 'gone' });
    await ds.apply(wep('g', 'gone', stale.ip));
    await ds.delete('Node', 'gone');
    await ds.apply(wep('orphan', 'n1', '10.30.0.200'));
    await ds.apply(wep('twin', 'n1', held.ip));

    const { code, report, text } = await check();
    assert.equal(code, 1);
    assert.deepEqual(
      report.leaked.map((l) => [l.ip, l.handle]),
      [[leaked.ip, 'leak']],
    );
    assert.deepEqual(
      report.doublyHeld.map((d) => [d.ip, d.holders.length]),
      [[held.ip, 2]],
    );
    assert.deepEqual(report.orphaned, [{ ip: '10.30.0.200', holder: 'WorkloadEndpoint default/orphan' }]);
    assert.deepEqual(report.staleAffinity, [{ block: stale.block, node: 'gone' }]);
    assert.match(text, /leaked: .*\ndoubly held: .*\norphaned: 10\.30\.0\.200 .*\nstale affinity: /);

    const out: string[] = [];
    assert.equal(await runDatastoreCommand(['ipam', 'repair'], { stdout: (s) => out.push(s), stderr: (s) => out.push(s) }, ds), 0);
    assert.match(out.join(''), /rebuilt 3 blocks, 3 handles, 3 addresses/);
    assert.match(out.join(''), new RegExp(`conflict: ${held.ip.replace(/\./g, '\\.')} kept by WorkloadEndpoint default/a`));

    const after = await check();
    assert.deepEqual(after.report.leaked, []);
    assert.deepEqual(after.report.orphaned, []);
    // The twin still claims a's address (repair cannot give it another one) and nothing is affine to the gone node.
    assert.deepEqual(
      after.report.doublyHeld.map((d) => d.ip),
      [held.ip],
    );
    assert.deepEqual(after.report.staleAffinity, []);
    await ds.delete('WorkloadEndpoint', 'default/twin');
    assert.equal((await check()).code, 0);

    // New allocations skip every held address, and release of a rebuilt handle frees it.
    const blocks = (await ds.list('IPAMBlock')).items as IPAMBlock[];
    const heldNow = new Set(['10.30.0.200', held.ip, stale.ip]);
    assert.equal(
      blocks.reduce((n, b) => n + b.spec.allocations.filter((x) => x !== null).length, 0),
      3,
    );
    for (let i = 0; i < 40; i++) {
      const a = await ipam.autoAssign({ handle: `new${i}`, node: 'n1' });
      assert.ok(!heldNow.has(a.ip), `${a.ip} handed out twice`);
      heldNow.add(a.ip);
    }
    assert.deepEqual(await ipam.releaseByHandle('orphan'), ['10.30.0.200']);
  });

  it("a node's WireGuard device address is held by its Node: not leaked, and rebuilt under its handle", async () => {
    await ds.apply({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'p' },
      spec: { cidr: '10.31.0.0/24', blockSize: 28, ipipMode: 'Never', vxlanMode: 'Never' },
    });
    const ipam = new Ipam(ds);
    const wg = await ipam.autoAssign({ handle: 'wireguard-tunnel-addr-n1', node: 'n1', attrs: { type: 'wireguardTunnelAddress' } });
    await ds.apply({ ...node('n1'), spec: { wireguard: { interfaceIPv4Address: wg.ip } } });
    const { code, report } = await check();
    assert.deepEqual(report.leaked, [], 'the device address is not a leak');
    assert.equal(code, 0);
    await ipam.releaseByHandle('wireguard-tunnel-addr-n1'); // freed while its Node still names it
    const orphaned = await check();
    assert.deepEqual(orphaned.report.orphaned, [{ ip: wg.ip, holder: 'Node n1' }]);
    assert.equal(await runDatastoreCommand(['ipam', 'repair'], { stdout: () => undefined, stderr: () => undefined }, ds), 0);
    assert.deepEqual(await ipam.releaseByHandle('wireguard-tunnel-addr-n1'), [wg.ip], 'rebuilt under the node WireGuard handle');
  });
}
