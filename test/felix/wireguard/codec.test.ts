// The WireGuard and fib-rule netlink messages felix writes, read back with the decoders it uses
// on the kernel's replies (the kernel answers a GET with the same attributes a SET carries).
import assert from 'node:assert/strict';
import { readDevice, readRule, writeRule, writeSetDevice, writeSetPeers, type DeviceState } from '../../../felix/wireguard/codec.js';
import { MessageWriter } from '../../../felix/netlink/writer.js';
import { generateWireguardKeyPair } from '../../../felix/index.js';

const FAMILY = 0x1f;

function decode(w: MessageWriter): DeviceState {
  const state: DeviceState = { listenPort: 0, fwmark: 0, peers: [] };
  assert.equal(w.buf.readUInt16LE(4), FAMILY, 'sent to the WireGuard family');
  assert.equal(w.buf.readUInt32LE(0), w.len, 'one message, its length in its header');
  readDevice(w.buf, 0, w.len, state);
  return state;
}

describe('felix WireGuard netlink codec', () => {
  it('a device: key, port and mark', () => {
    const k = generateWireguardKeyPair();
    const w = new MessageWriter(1);
    writeSetDevice(w, FAMILY, 'wireguard.cali', k.privateKey, 51820, 0x100000);
    assert.deepEqual(decode(w), { privateKey: k.privateKey, listenPort: 51820, fwmark: 0x100000, peers: [] });
  });

  it('peers: IPv4 and IPv6 endpoints, keepalive, allowed IPs of both families; a removal carries the key only', () => {
    const a = generateWireguardKeyPair().publicKey;
    const b = generateWireguardKeyPair().publicKey;
    const gone = generateWireguardKeyPair().publicKey;
    const w = new MessageWriter(1);
    writeSetPeers(
      w,
      FAMILY,
      'wg0',
      [
        { publicKey: a, endpoint: '10.0.0.2:51820', allowedIps: ['10.65.1.0/26', '10.65.1.1/32'], keepAliveSeconds: 25 },
        { publicKey: b, endpoint: '[fd00::2]:51821', allowedIps: ['fd65:0:0:1::/122'], keepAliveSeconds: 0 },
      ],
      [gone],
    );
    const d = decode(w);
    assert.deepEqual(d.peers, [
      { publicKey: gone, allowedIps: [], keepAliveSeconds: 0, latestHandshake: 0 },
      { publicKey: a, endpoint: '10.0.0.2:51820', allowedIps: ['10.65.1.0/26', '10.65.1.1/32'], keepAliveSeconds: 25, latestHandshake: 0 },
      { publicKey: b, endpoint: '[fd00::2]:51821', allowedIps: ['fd65:0:0:1::/122'], keepAliveSeconds: 0, latestHandshake: 0 },
    ]);
  });

  it('a bad endpoint is refused before anything is written', () => {
    const w = new MessageWriter(1);
    assert.throws(
      () =>
        writeSetPeers(
          w,
          FAMILY,
          'wg0',
          [{ publicKey: generateWireguardKeyPair().publicKey, endpoint: 'nowhere', allowedIps: [], keepAliveSeconds: 0 }],
          [],
        ),
      /endpoint nowhere/,
    );
    assert.equal(w.len, 0, 'no half message');
  });

  it('the rule: not fwmark M/M lookup T at a priority, both families; other shapes are not ours', () => {
    for (const family of [4, 6] as const) {
      const rule = { family, priority: 99, table: 1, fwmark: 0x100000 };
      const w = new MessageWriter(1);
      writeRule(w, 'add', rule);
      assert.deepEqual(readRule(w.buf, 0, w.len, family), rule);
    }
    const w = new MessageWriter(1);
    writeRule(w, 'add', { family: 4, priority: 99, table: 300, fwmark: 0x4000 });
    assert.deepEqual(
      readRule(w.buf, 0, w.len, 4),
      { family: 4, priority: 99, table: 300, fwmark: 0x4000 },
      'a table past 255 in FRA_TABLE',
    );
    w.buf.writeUInt32LE(0, 16 + 8); // not inverted: "fwmark M lookup T", someone else's
    assert.equal(readRule(w.buf, 0, w.len, 4), null);
  });
});
