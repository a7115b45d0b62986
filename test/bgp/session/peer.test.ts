// A Peer's two events for a received UPDATE: `receivedUpdate` (the octets, the message made
// on demand) and `update` (the message), over real TCP on loopback against a raw peer.
import assert from 'node:assert/strict';
import net from 'node:net';
import { Peer, encodeMessage, receivedNlri, type BgpError, type ReceivedUpdate, type UpdateMessage } from '../../../index.js';
import { RawPeer } from '../../support/raw-peer.js';
import { waitFor } from '../../support/wait.js';

const LOCAL = '127.0.27.1';
const REMOTE = '127.0.27.2';
let nextPort = 21000 + (process.pid % 5000) * 2;

const update = (prefixes: string[]): UpdateMessage => ({
  type: 'update',
  withdrawn: [],
  attributes: { origin: 'igp', asPath: [{ type: 'sequence', asns: [65002] }], nextHop: REMOTE },
  nlri: prefixes.map((prefix) => ({ prefix })),
});

/** An UPDATE whose MULTI_EXIT_DISC is three octets long: RFC 7606 treat-as-withdraw. */
function badMed(prefix: string): Buffer {
  const m = encodeMessage(update([prefix]));
  const attrLen = m.readUInt16BE(21);
  const out = Buffer.concat([m.subarray(0, 23 + attrLen), Buffer.from([0x80, 4, 3, 0, 0, 1]), m.subarray(23 + attrLen)]);
  out.writeUInt16BE(attrLen + 6, 21);
  out.writeUInt16BE(out.length, 16);
  return out;
}

describe('a Peer hands received UPDATEs to its listeners', function () {
  this.timeout(30_000);
  let server: net.Server;
  let peer: Peer;
  let raw: RawPeer | undefined;

  beforeEach(async () => {
    const port = nextPort++;
    const accepted = new Promise<RawPeer>((resolve) => {
      server = net.createServer((s) => resolve(new RawPeer(s)));
    });
    await new Promise<void>((resolve) => server.listen(port, REMOTE, resolve));
    peer = new Peer(
      { address: REMOTE, asn: 65002, port, localAddress: LOCAL, holdTime: 9, connectRetryTime: 1 },
      { asn: 65001, routerId: LOCAL },
    );
    peer.start();
    raw = await accepted;
    await raw.message('open');
    raw.open(65002, REMOTE);
    raw.send({ type: 'keepalive' });
    await waitFor(() => peer.isEstablished, { what: 'Established', until: (up) => up, timeoutMs: 10_000, intervalMs: 10 });
  });

  afterEach(async () => {
    await peer.stop();
    raw?.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it('`receivedUpdate` then `update`, one message between them, the RFC 7606 error on both', async () => {
    const events: Array<{ event: string; message: UpdateMessage; error: BgpError | undefined }> = [];
    const unread: boolean[] = [];
    peer.on('receivedUpdate', (u, error) => {
      unread.push(receivedNlri(u)?.unread === true);
      events.push({ event: 'receivedUpdate', message: u.message, error });
    });
    peer.on('update', (message, error) => events.push({ event: 'update', message, error }));
    raw!.send(update(['10.27.1.0/24', '10.27.2.0/24']));
    raw!.send(badMed('10.27.3.0/24'));
    await waitFor(() => events.length, { what: 'four events', until: (n) => n >= 4, timeoutMs: 5000, intervalMs: 10 });

    assert.deepEqual(
      events.map((e) => e.event),
      ['receivedUpdate', 'update', 'receivedUpdate', 'update'],
    );
    assert.deepEqual(unread, [true, false], 'a clean UPDATE comes with its prefix lists unmade; the malformed one was decoded whole');
    assert.equal(events[0].message, events[1].message, 'both events of an UPDATE carry the same message object');
    assert.deepEqual(
      events[1].message.nlri.map((n) => n.prefix),
      ['10.27.1.0/24', '10.27.2.0/24'],
    );
    assert.deepEqual(events[1].message.attributes.asPath, [{ type: 'sequence', asns: [65002] }]);
    assert.equal(events[1].error, undefined);
    assert.equal(events[2].message, events[3].message, 'the malformed UPDATE too');
    assert.equal(events[3].error?.action, 'treat-as-withdraw');
    assert.equal(events[2].error, events[3].error);
    assert.deepEqual(
      events[3].message.nlri.map((n) => n.prefix),
      ['10.27.3.0/24'],
    );
  });

  it('`update` reaches a listener added between two UPDATEs, and only from then on', async () => {
    const received: ReceivedUpdate[] = [];
    const messages: UpdateMessage[] = [];
    peer.on('receivedUpdate', (u) => received.push(u));
    raw!.send(update(['10.27.4.0/24']));
    await waitFor(() => received.length, { what: 'the first UPDATE', until: (n) => n === 1, timeoutMs: 5000, intervalMs: 10 });
    peer.on('update', (m) => messages.push(m));
    raw!.send(update(['10.27.5.0/24']));
    await waitFor(() => messages.length, { what: 'the second UPDATE', until: (n) => n === 1, timeoutMs: 5000, intervalMs: 10 });
    assert.equal(received.length, 2);
    assert.deepEqual(
      messages[0].nlri.map((n) => n.prefix),
      ['10.27.5.0/24'],
    );
    assert.equal(messages[0], received[1].message);
  });
});
