// This node's WireGuard identity against IPAM in the in-memory datastore: a key pair per family
// whose private half stays in a 0600 file, the public half and the device address published on
// the Node, a lost key file replaced by a new published key, and the cluster turned into felix's
// WireGuard input.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WireguardKeeper, wireguardHandle } from '../../../lib/agent/wireguard.js';
import { wireguardPublicKey } from '../../../felix/index.js';
import { memoryDatastore, type BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { API_VERSION, type IPPool, type Node } from '../../../lib/resources/index.js';
import { cidrContains, parseAddress, parseCidr } from '../../../ip/index.js';
import { waitFor } from '../../support/wait.js';

const pool = (name: string, cidr: string): IPPool => ({
  apiVersion: API_VERSION,
  kind: 'IPPool',
  metadata: { name },
  spec: { cidr, blockSize: cidr.includes(':') ? 122 : 26, ipipMode: 'Never', vxlanMode: 'Never' },
});

describe('agent WireGuard keys', () => {
  let ds: BackendDatastore;
  let ipam: Ipam;
  let dir: string;
  let logged: [string, Record<string, unknown>][];
  const made: WireguardKeeper[] = [];
  let reconciles = 0;
  const self = async (name = 'n1'): Promise<Node> => (await ds.get('Node', name))!;
  const pools = async () => (await ds.list('IPPool')).items;
  const keeper = (enabled = { v4: true, v6: false }) => {
    const k = new WireguardKeeper({
      nodeName: 'n1',
      datastore: ds,
      ipam,
      stateDir: dir,
      enabled,
      log: (e, f) => logged.push([e, f]),
      onDatastoreError: () => undefined,
      reconcile: () => reconciles++,
    });
    made.push(k);
    return k;
  };

  beforeEach(async () => {
    ds = memoryDatastore();
    ipam = new Ipam(ds);
    dir = mkdtempSync(join(tmpdir(), 'wg-keys-'));
    logged = [];
    reconciles = 0;
    await ds.create(pool('v4', '10.70.0.0/16'));
    await ds.create(pool('v6', 'fd70::/48'));
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'Node',
      metadata: { name: 'n1', annotations: { keep: 'me' } },
      spec: { bgp: { ipv4Address: '10.0.0.1/24', ipv6Address: 'fd00::1/64' } },
    });
  });
  afterEach(async () => {
    for (const k of made.splice(0)) k.close();
    await ds.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a key pair made here: the private key in a 0600 file, the public key and an address from the node’s block on the Node', async () => {
    const k = keeper();
    await k.ensure(await self(), await pools());
    const file = join(dir, 'wireguard.key');
    assert.equal(statSync(file).mode & 0o777, 0o600, 'only the agent reads the key');
    const priv = readFileSync(file, 'utf8').trim();
    const n = await self();
    assert.equal(n.spec.status?.wireguardPublicKey, wireguardPublicKey(priv), 'the published key is the file key half');
    assert.equal(n.spec.status?.wireguardPublicKeyV6, undefined, 'IPv6 is off');
    assert.ok(!JSON.stringify(n).includes(priv), 'the private key is nowhere on the Node');
    const address = n.spec.wireguard?.interfaceIPv4Address ?? '';
    const [block] = await ipam.blocksForNode('n1');
    assert.ok(block && cidrContains(parseCidr(block.cidr), parseAddress(address)), `${address} in the node's block`);
    assert.deepEqual(await ipam.releaseByHandle(wireguardHandle('n1')), [address], 'held under the node’s WireGuard handle');
    assert.equal(n.metadata.annotations?.keep, 'me', 'the rest of the Node is kept');
    assert.deepEqual(n.spec.bgp, { ipv4Address: '10.0.0.1/24', ipv6Address: 'fd00::1/64' });
  });

  it('asked again (and by a new agent on the same folder): the same key, no new write', async () => {
    await keeper().ensure(await self(), await pools());
    const before = await self();
    await keeper().ensure(before, await pools());
    const after = await self();
    assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion, 'nothing written');
    assert.equal(after.spec.status?.wireguardPublicKey, before.spec.status?.wireguardPublicKey);
  });

  it('the key file lost: a new key is made and published, the address kept', async () => {
    const k = keeper();
    await k.ensure(await self(), await pools());
    const first = await self();
    rmSync(join(dir, 'wireguard.key'));
    await k.ensure(first, await pools());
    const second = await self();
    assert.ok(existsSync(join(dir, 'wireguard.key')), 'a new file');
    assert.notEqual(second.spec.status?.wireguardPublicKey, first.spec.status?.wireguardPublicKey, 'a new key is published');
    assert.equal(second.spec.status?.wireguardPublicKey, wireguardPublicKey(readFileSync(join(dir, 'wireguard.key'), 'utf8').trim()));
    assert.equal(second.spec.wireguard?.interfaceIPv4Address, first.spec.wireguard?.interfaceIPv4Address);
    assert.ok(
      logged.some(([e, f]) => e === 'wireguard-key-created' && f.replaced === first.spec.status?.wireguardPublicKey),
      'the replacement is logged with the key it replaces',
    );
    const input = k.input(second, [second], []);
    assert.equal(input?.v4?.privateKey, readFileSync(join(dir, 'wireguard.key'), 'utf8').trim(), 'felix gets the new key');
  });

  it('the key file lost between reconciles: replaced as soon as it goes, and the agent asked to publish it', async () => {
    const k = keeper();
    await k.ensure(await self(), await pools());
    const file = join(dir, 'wireguard.key');
    const first = readFileSync(file, 'utf8').trim();
    rmSync(file);
    const t0 = Date.now();
    await waitFor(() => reconciles, { what: 'a reconcile asked for', until: (n) => n > 0, timeoutMs: 2_000, intervalMs: 5 });
    assert.ok(Date.now() - t0 < 1_000, `noticed in ${Date.now() - t0} ms, not at the next datastore change`);
    const second = readFileSync(file, 'utf8').trim();
    assert.notEqual(second, first, 'a new key in the file, with no reconcile of ours in between');
    assert.equal(k.local(await self(), 4)?.privateKey, second, 'the keeper holds the new key for felix');
    await k.ensure(await self(), await pools());
    assert.equal((await self()).spec.status?.wireguardPublicKey, wireguardPublicKey(second), 'the reconcile publishes it');
  });

  it('IPv6 too: its own key and address; a family turned off loses its key and its device address (released to IPAM)', async () => {
    await keeper({ v4: true, v6: true }).ensure(await self(), await pools());
    const n = await self();
    assert.ok(n.spec.status?.wireguardPublicKeyV6, 'an IPv6 key');
    assert.notEqual(n.spec.status?.wireguardPublicKeyV6, n.spec.status?.wireguardPublicKey, 'a key of its own');
    assert.match(n.spec.wireguard?.interfaceIPv6Address ?? '', /^fd70:/);
    const v6Only = keeper({ v4: false, v6: true });
    await v6Only.ensure(n, await pools());
    const half = await self();
    assert.equal(half.spec.status?.wireguardPublicKey, undefined, 'the IPv4 key off the Node');
    assert.equal(half.spec.wireguard?.interfaceIPv4Address, undefined, 'the IPv4 device address off the Node');
    assert.equal(half.spec.wireguard?.interfaceIPv6Address, n.spec.wireguard?.interfaceIPv6Address, 'the IPv6 one kept');
    assert.deepEqual(await ipam.releaseByHandle(wireguardHandle('n1', 4)), [], 'the IPv4 address is back in IPAM');
    const off = keeper({ v4: false, v6: false });
    await off.ensure(half, await pools());
    assert.equal((await self()).spec.status, undefined, 'no key published: the others reach this node in clear');
    assert.equal((await self()).spec.wireguard, undefined, 'no device address on the Node');
    assert.deepEqual(await ipam.releaseByHandle(wireguardHandle('n1', 6)), [], 'the IPv6 address is back in IPAM');
    assert.ok(
      logged.some(([e, f]) => e === 'wireguard-interface-address-released' && f.family === 6),
      'the release is logged',
    );
    const quiet = (await self()).metadata.resourceVersion;
    await off.ensure(await self(), await pools());
    assert.equal((await self()).metadata.resourceVersion, quiet, 'nothing more to write');
    assert.equal(off.input(await self(), [], []), undefined, 'felix gets no WireGuard input');
  });

  it('felix input: this node’s key and address, each other node’s addresses, keys and blocks by affinity', async () => {
    const k = keeper();
    await k.ensure(await self(), await pools());
    const key2 = 'm9TXUUo74FvTEOHtg4w7fYrcBl4SwOweSFuDGkJeIn8=';
    const n2: Node = {
      apiVersion: API_VERSION,
      kind: 'Node',
      metadata: { name: 'n2' },
      spec: {
        bgp: { ipv4Address: '10.0.0.2/24' },
        wireguard: { interfaceIPv4Address: '10.70.1.1' },
        status: { wireguardPublicKey: key2 },
      },
    };
    const n3: Node = { apiVersion: API_VERSION, kind: 'Node', metadata: { name: 'n3' }, spec: { bgp: { ipv4Address: '10.0.0.3/24' } } };
    const block = (cidr: string, affinity: string | null) => ({
      apiVersion: API_VERSION,
      kind: 'IPAMBlock' as const,
      metadata: { name: cidr },
      spec: { cidr, affinity, allocations: [], unallocated: [], attributes: [] },
    });
    const me = await self();
    const input = k.input(
      me,
      [me, n2, n3],
      [block('10.70.1.0/26', 'host:n2'), block('10.70.2.0/26', 'host:n3'), block('10.70.3.0/26', null), block('10.70.4.0/26', 'host:n2')],
    );
    assert.equal(input?.v4?.interfaceAddress, me.spec.wireguard?.interfaceIPv4Address);
    assert.deepEqual(input?.peers, [
      {
        name: 'n2',
        addressV4: '10.0.0.2',
        publicKey: key2,
        interfaceAddressV4: '10.70.1.1',
        blocks: ['10.70.1.0/26', '10.70.4.0/26'],
      },
      { name: 'n3', addressV4: '10.0.0.3', blocks: ['10.70.2.0/26'] },
    ]);
  });
});
