// The WireGuard state a node wants, from its input alone: a peer per node with a key (endpoint,
// allowed IPs = its blocks and device address), a table route per allowed prefix through the
// device, the rule at its priority; nodes without a key get nothing (reached in clear).
import assert from 'node:assert/strict';
import {
  computeWireguardState,
  generateWireguardKeyPair,
  resolveWireguardSettings,
  type WireguardInput,
  type WireguardPeer,
} from '../../../felix/index.js';

const me = generateWireguardKeyPair();
const meV6 = generateWireguardKeyPair();
const b = generateWireguardKeyPair();
const bV6 = generateWireguardKeyPair();
const c = generateWireguardKeyPair();
const settings = resolveWireguardSettings();

const peerB: WireguardPeer = {
  name: 'b',
  addressV4: '10.0.0.2/24',
  addressV6: 'fd00::2/64',
  publicKey: b.publicKey,
  publicKeyV6: bV6.publicKey,
  interfaceAddressV4: '10.65.1.1',
  interfaceAddressV6: 'fd65:0:0:1::1',
  blocks: ['10.65.1.0/26', 'fd65:0:0:1::/122', '10.65.9.0/26'],
};

const input = (peers: WireguardPeer[], extra: Partial<WireguardInput> = {}): WireguardInput => ({
  v4: { privateKey: me.privateKey, interfaceAddress: '10.65.0.1' },
  peers,
  ...extra,
});

describe('felix WireGuard desired state', () => {
  it('a peer with a key: endpoint at its port, its blocks and device address allowed, routed through the device', () => {
    const s = computeWireguardState(input([peerB]), settings);
    assert.ok(s.v4, 'IPv4 WireGuard is on');
    assert.equal(s.v6, undefined, 'IPv6 is off: no v6 local part given');
    assert.deepEqual(s.v4.device, {
      family: 4,
      name: 'wireguard.cali',
      port: 51820,
      mtu: 1440,
      fwmark: 0x100000,
      privateKey: me.privateKey,
      address: '10.65.0.1/32',
    });
    assert.deepEqual(s.v4.peers, [
      {
        publicKey: b.publicKey,
        endpoint: '10.0.0.2:51820',
        allowedIps: ['10.65.1.0/26', '10.65.1.1/32', '10.65.9.0/26'],
        keepAliveSeconds: 0,
      },
    ]);
    assert.deepEqual(
      s.v4.routes.map((r) => `${r.dst} ${r.dev}`),
      ['10.65.1.0/26 wireguard.cali', '10.65.1.1/32 wireguard.cali', '10.65.9.0/26 wireguard.cali'],
    );
    assert.deepEqual(s.v4.rule, { family: 4, priority: 99, table: 1, fwmark: 0x100000 });
    assert.deepEqual(s.problems, []);
  });

  it('IPv6: its own device, port and MTU, the IPv6 key and prefixes only', () => {
    const s = computeWireguardState(
      input([peerB], { v4: undefined, v6: { privateKey: meV6.privateKey, interfaceAddress: 'fd65::1' } }),
      settings,
    );
    assert.equal(s.v4, undefined, 'IPv4 off');
    assert.ok(s.v6, 'IPv6 on');
    assert.equal(s.v6.device.name, 'wg-v6.cali');
    assert.equal(s.v6.device.mtu, 1420);
    assert.equal(s.v6.device.address, 'fd65::1/128');
    assert.deepEqual(s.v6.peers, [
      { publicKey: bV6.publicKey, endpoint: '[fd00::2]:51821', allowedIps: ['fd65:0:0:1::/122', 'fd65:0:0:1::1/128'], keepAliveSeconds: 0 },
    ]);
    assert.deepEqual(s.v6.rule.family, 6);
  });

  it('a node without a key is no peer and has no route: the main table reaches it in clear', () => {
    const clear: WireguardPeer = { name: 'c', addressV4: '10.0.0.3', blocks: ['10.65.2.0/26'] };
    const s = computeWireguardState(input([peerB, clear]), settings);
    assert.deepEqual(
      s.v4?.peers.map((p) => p.publicKey),
      [b.publicKey],
    );
    assert.ok(!s.v4?.routes.some((r) => r.dst === '10.65.2.0/26'), 'no route to the clear node block in the WireGuard table');
  });

  it('no local part: no state at all (a device left from before is removed)', () => {
    const s = computeWireguardState({ peers: [peerB] }, settings);
    assert.deepEqual(s, { problems: [] });
    assert.deepEqual(computeWireguardState(undefined, settings), { problems: [] });
  });

  it('the settings: ports, names, MTU, rule priority, table, keepalive; an MTU of 0 is the default', () => {
    const s = computeWireguardState(
      input([peerB]),
      resolveWireguardSettings({ port: 5000, interfaceName: 'wg0', mtu: 0, rulePriority: 200, table: 7, keepAliveSeconds: 25 }),
    );
    assert.equal(s.v4?.device.port, 5000);
    assert.equal(s.v4?.device.name, 'wg0');
    assert.equal(s.v4?.device.mtu, 1440);
    assert.deepEqual(s.v4?.rule, { family: 4, priority: 200, table: 7, fwmark: 0x100000 });
    assert.equal(s.v4?.peers[0].endpoint, '10.0.0.2:5000', 'every node listens on the same configured port');
    assert.equal(s.v4?.peers[0].keepAliveSeconds, 25);
    assert.ok(
      s.v4?.routes.every((r) => r.dev === 'wg0'),
      'routes go through the configured device',
    );
  });

  it('a key held by two nodes (or by this node) is no one’s: both are reached in clear, and it is said', () => {
    const twin: WireguardPeer = { name: 'twin', addressV4: '10.0.0.4', publicKey: b.publicKey, blocks: ['10.65.4.0/26'] };
    const mine: WireguardPeer = { name: 'copy', addressV4: '10.0.0.5', publicKey: me.publicKey, blocks: ['10.65.5.0/26'] };
    const ok: WireguardPeer = { name: 'c', addressV4: '10.0.0.3', publicKey: c.publicKey, blocks: ['10.65.3.0/26'] };
    const s = computeWireguardState(input([peerB, twin, mine, ok]), settings);
    assert.deepEqual(
      s.v4?.peers.map((p) => p.publicKey),
      [c.publicKey],
    );
    assert.ok(
      s.problems.some((p) => p.includes('b and twin')),
      `the shared key is reported: ${s.problems.join('; ')}`,
    );
    assert.ok(
      s.problems.some((p) => p.includes('this node and copy')),
      `a copy of our key is reported: ${s.problems.join('; ')}`,
    );
  });

  it('a prefix two nodes claim goes to the first by name, and it is said', () => {
    const other: WireguardPeer = { name: 'c', addressV4: '10.0.0.3', publicKey: c.publicKey, blocks: ['10.65.1.0/26', '10.65.3.0/26'] };
    const s = computeWireguardState(input([other, peerB]), settings);
    const cPeer = s.v4?.peers.find((p) => p.publicKey === c.publicKey);
    assert.deepEqual(cPeer?.allowedIps, ['10.65.3.0/26'], 'c keeps only what b does not have');
    assert.ok(
      s.problems.some((p) => p.includes('10.65.1.0/26') && p.includes('goes to b')),
      `the clash is reported: ${s.problems.join('; ')}`,
    );
  });

  it('a bad key or address leaves that node out with a problem, not the others', () => {
    const bad: WireguardPeer = { name: 'bad', addressV4: '10.0.0.9', publicKey: 'not-a-key', blocks: ['10.65.8.0/26'] };
    const s = computeWireguardState(input([peerB, bad]), settings);
    assert.deepEqual(
      s.v4?.peers.map((p) => p.publicKey),
      [b.publicKey],
    );
    assert.ok(
      s.problems.some((p) => p.includes('node bad')),
      'the bad key is named',
    );
    const broken = computeWireguardState({ v4: { privateKey: 'short' }, peers: [peerB] }, settings);
    assert.equal(broken.v4, undefined, 'our own bad private key: no device');
    assert.ok(broken.problems[0]?.includes('private key'), 'and it is said');
  });

  it('the same input gives the same state whatever the order of the nodes', () => {
    const d: WireguardPeer = { name: 'd', addressV4: '10.0.0.3', publicKey: c.publicKey, blocks: ['10.65.3.0/26'] };
    assert.deepEqual(computeWireguardState(input([peerB, d]), settings), computeWireguardState(input([d, peerB]), settings));
  });
});
