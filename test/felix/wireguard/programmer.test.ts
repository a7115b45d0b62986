// Felix keeping WireGuard equal to its input, on the in-memory dataplanes: the device, peers,
// table routes and rule follow the cluster, each change written as its difference, a family
// turned off cleaned up, and what is changed behind felix's back repaired at the next resync.
import assert from 'node:assert/strict';
import {
  Felix,
  generateWireguardKeyPair,
  MemoryDataplane,
  MemoryWireguardDataplane,
  PODROUTE_PROTOCOL,
  type WireguardInput,
  type WireguardPeer,
} from '../../../felix/index.js';

const me = generateWireguardKeyPair();
const keyB = generateWireguardKeyPair();
const keyC = generateWireguardKeyPair();

const nodeB = (publicKey = keyB.publicKey): WireguardPeer => ({
  name: 'b',
  addressV4: '10.0.0.2',
  publicKey,
  interfaceAddressV4: '10.65.1.1',
  blocks: ['10.65.1.0/26'],
});
const nodeC: WireguardPeer = { name: 'c', addressV4: '10.0.0.3', publicKey: keyC.publicKey, blocks: ['10.65.2.0/26'] };
const clearNode: WireguardPeer = { name: 'd', addressV4: '10.0.0.4', blocks: ['10.65.3.0/26'] };

const wg = (peers: WireguardPeer[]): WireguardInput => ({ v4: { privateKey: me.privateKey, interfaceAddress: '10.65.0.1' }, peers });

function table(dp: MemoryWireguardDataplane): string[] {
  return [...(dp.tables.get('4|1')?.values() ?? [])].map((r) => `${r.dst} ${r.dev}`).sort();
}

describe('felix WireGuard programming (in-memory dataplanes)', () => {
  let felix: Felix | undefined;
  afterEach(() => felix?.stop());

  async function start(dp: MemoryWireguardDataplane, input: WireguardInput | undefined) {
    felix = new Felix(new MemoryDataplane({ links: ['eth0'] }), { resyncIntervalMs: 0, wireguardDataplane: dp });
    felix.update({ node: { addressV4: '10.0.0.1/24', uplink: 'eth0' } });
    felix.setWireguard(input);
    return felix.start();
  }

  it('device, peers, table routes and rule from the input; a node without a key gets none of it', async () => {
    const dp = new MemoryWireguardDataplane();
    const r = await start(dp, wg([nodeB(), clearNode]));
    assert.deepEqual(r.failures, []);
    assert.ok(r.wireguard, 'the report carries the WireGuard sync');
    assert.deepEqual(
      r.devices.map((d) => `${d.name} ${d.ok}`),
      ['wireguard.cali true'],
    );
    const dev = dp.devices.get('wireguard.cali');
    assert.equal(dev?.spec.address, '10.65.0.1/32');
    assert.deepEqual(
      [...(dev?.peers.values() ?? [])].map((p) => [p.publicKey, p.endpoint, p.allowedIps]),
      [[keyB.publicKey, '10.0.0.2:51820', ['10.65.1.0/26', '10.65.1.1/32']]],
    );
    assert.deepEqual(table(dp), ['10.65.1.0/26 wireguard.cali', '10.65.1.1/32 wireguard.cali']);
    assert.deepEqual(dp.rules, [{ family: 4, priority: 99, table: 1, fwmark: 0x100000 }]);
    assert.ok(
      [...(dp.tables.get('4|1')?.values() ?? [])].every((x) => x.protocol === PODROUTE_PROTOCOL),
      'the table routes carry felix protocol',
    );
  });

  it('a node joining costs one peer write with that node only; one leaving, one removal', async () => {
    const dp = new MemoryWireguardDataplane();
    await start(dp, wg([nodeB()]));
    dp.peerWrites.length = 0;
    felix?.setWireguard(wg([nodeB(), nodeC]));
    await felix?.settled();
    assert.deepEqual(
      dp.peerWrites.map((w) => [w.set.map((p) => p.publicKey), w.remove]),
      [[[keyC.publicKey], []]],
    );
    assert.ok(table(dp).includes('10.65.2.0/26 wireguard.cali'), 'the new node blocks are routed through the device');
    dp.peerWrites.length = 0;
    felix?.setWireguard(wg([nodeC]));
    await felix?.settled();
    assert.deepEqual(
      dp.peerWrites.map((w) => [w.set.length, w.remove]),
      [[0, [keyB.publicKey]]],
    );
    assert.deepEqual(table(dp), ['10.65.2.0/26 wireguard.cali']);
  });

  it('a node key rotated: the old peer goes, the new one takes its prefixes', async () => {
    const dp = new MemoryWireguardDataplane();
    await start(dp, wg([nodeB()]));
    const rotated = generateWireguardKeyPair();
    felix?.setWireguard(wg([nodeB(rotated.publicKey)]));
    await felix?.settled();
    const peers = [...(dp.devices.get('wireguard.cali')?.peers.values() ?? [])];
    assert.deepEqual(
      peers.map((p) => [p.publicKey, p.allowedIps]),
      [[rotated.publicKey, ['10.65.1.0/26', '10.65.1.1/32']]],
    );
  });

  it('our own key changed: the device gets it', async () => {
    const dp = new MemoryWireguardDataplane();
    await start(dp, wg([nodeB()]));
    const fresh = generateWireguardKeyPair();
    felix?.setWireguard({ v4: { privateKey: fresh.privateKey }, peers: [nodeB()] });
    await felix?.settled();
    assert.equal(dp.devices.get('wireguard.cali')?.spec.privateKey, fresh.privateKey);
  });

  it('WireGuard turned off: rule, routes and device go', async () => {
    const dp = new MemoryWireguardDataplane();
    await start(dp, wg([nodeB()]));
    felix?.setWireguard(undefined);
    await felix?.settled();
    assert.deepEqual(dp.rules, []);
    assert.deepEqual(table(dp), []);
    assert.equal(dp.devices.size, 0);
  });

  it('a resync repairs a peer and a rule removed behind felix’s back, and touches nothing else', async () => {
    const dp = new MemoryWireguardDataplane();
    await start(dp, wg([nodeB(), nodeC]));
    dp.devices.get('wireguard.cali')?.peers.delete(keyC.publicKey);
    dp.rules.length = 0;
    dp.peerWrites.length = 0;
    const r = await felix?.resync();
    assert.deepEqual(r?.failures, []);
    assert.deepEqual(
      dp.peerWrites.map((w) => w.set.map((p) => p.publicKey)),
      [[keyC.publicKey]],
    );
    assert.equal(dp.rules.length, 1);
  });

  it('nothing changed: no WireGuard work on an incremental apply', async () => {
    const dp = new MemoryWireguardDataplane();
    await start(dp, wg([nodeB()]));
    dp.peerWrites.length = 0;
    felix?.update({ ownBlocks: ['10.65.0.0/26'] });
    const r = await felix?.apply();
    assert.equal(r?.wireguard, undefined, 'the WireGuard sync did not run');
    assert.deepEqual(dp.peerWrites, []);
  });

  it('a device that cannot be made is reported and retried; nothing is routed to it', async () => {
    const dp = new MemoryWireguardDataplane();
    dp.foreignLinks.add('wireguard.cali');
    const r = await start(dp, wg([nodeB()]));
    const dev = r.devices.find((d) => d.name === 'wireguard.cali');
    assert.equal(dev?.ok, false);
    assert.match(dev?.detail ?? '', /another device/);
    assert.deepEqual(table(dp), []);
    assert.deepEqual(dp.rules, [], 'no rule sends traffic to a table without a device');
    dp.foreignLinks.clear();
    felix?.setWireguard(wg([nodeB()]));
    await felix?.settled();
    assert.equal(dp.rules.length, 1, 'once the name is free, the device and the rule come');
  });

  it('a node that never had WireGuard: a resync reads no table routes (that dump is of every route of the family)', async () => {
    let dumps = 0;
    class Counting extends MemoryWireguardDataplane {
      override async listTableRoutes(...a: Parameters<MemoryWireguardDataplane['listTableRoutes']>) {
        dumps++;
        return super.listTableRoutes(...a);
      }
    }
    const dp = new Counting();
    await start(dp, undefined);
    await felix?.resync();
    assert.equal(dumps, 0);
    felix?.setWireguard(wg([nodeB()]));
    await felix?.settled();
    felix?.setWireguard(wg([nodeB(), nodeC]));
    await felix?.settled();
    assert.equal(dumps, 1, 'read once, then kept from what was written');
    assert.deepEqual(table(dp), ['10.65.1.0/26 wireguard.cali', '10.65.1.1/32 wireguard.cali', '10.65.2.0/26 wireguard.cali']);
  });
});
