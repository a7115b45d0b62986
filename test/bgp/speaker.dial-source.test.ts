// Where a speaker's connections come from, and what it says of one it cannot place. A speaker
// listening on one address dials from it, so the peer sees the address it was configured
// with; a connection from an address no peer has is refused and named, with the likely fix.
import assert from 'node:assert/strict';
import net from 'node:net';
import { BgpSpeaker } from '../../index.js';
import { waitFor } from '../support/wait.js';

/** A listener standing in for the peer: the address each connection came from. */
async function listener(host: string): Promise<{ port: number; from: string[]; close: () => void }> {
  const from: string[] = [];
  const server = net.createServer((s) => {
    from.push(s.remoteAddress ?? '');
    s.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { port: (server.address() as net.AddressInfo).port, from, close: () => server.close() };
}

describe('speaker: the address it dials from', function () {
  this.timeout(20_000);
  let speaker: BgpSpeaker;
  let peer: Awaited<ReturnType<typeof listener>>;
  afterEach(async () => {
    peer.close();
    await speaker.stop();
  });

  const firstDial = () =>
    waitFor(() => peer.from[0], { what: 'a connection from the speaker', until: (a) => a !== undefined, timeoutMs: 5000, intervalMs: 5 });

  it('a speaker listening on one address dials from it (not the kernel’s pick, 127.0.0.1 on loopback)', async () => {
    peer = await listener('127.0.5.42');
    speaker = new BgpSpeaker({ asn: 65001, routerId: '10.0.0.1', listen: { host: '127.0.5.41', port: 0 } });
    await speaker.start();
    speaker.addPeer({ address: '127.0.5.42', asn: 65002, port: peer.port });
    assert.equal(await firstDial(), '127.0.5.41');
  });

  it('a peer’s localAddress wins over the listen address', async () => {
    peer = await listener('127.0.5.42');
    speaker = new BgpSpeaker({ asn: 65001, routerId: '10.0.0.1', listen: { host: '127.0.5.41', port: 0 } });
    await speaker.start();
    speaker.addPeer({ address: '127.0.5.42', asn: 65002, port: peer.port, localAddress: '127.0.5.43' });
    assert.equal(await firstDial(), '127.0.5.43');
  });

  it('a peer with kernelSourceAddress dials from the kernel’s pick though the speaker listens on one address', async () => {
    peer = await listener('127.0.5.42');
    speaker = new BgpSpeaker({ asn: 65001, routerId: '10.0.0.1', listen: { host: '127.0.5.41', port: 0 } });
    await speaker.start();
    speaker.addPeer({ address: '127.0.5.42', asn: 65002, port: peer.port, kernelSourceAddress: true });
    assert.equal(await firstDial(), '127.0.0.1');
  });

  it('a speaker listening on every address leaves the source to the kernel', async () => {
    peer = await listener('127.0.5.42');
    speaker = new BgpSpeaker({ asn: 65001, routerId: '10.0.0.1', listen: { host: '0.0.0.0', port: 0 } });
    await speaker.start();
    speaker.addPeer({ address: '127.0.5.42', asn: 65002, port: peer.port });
    assert.equal(await firstDial(), '127.0.0.1');
  });
});

describe('speaker: a connection from an address that is no peer', function () {
  this.timeout(20_000);
  let speaker: BgpSpeaker;
  afterEach(() => speaker.stop());

  it('is refused, and the connectionRefused event names the address and the likely fix', async () => {
    speaker = new BgpSpeaker({ asn: 65001, routerId: '10.0.0.1', listen: { host: '127.0.5.51', port: 0 } });
    const port = (await speaker.start())!;
    speaker.addPeer({ address: '127.0.5.52', asn: 65002, port: 1, passive: true });
    const refused: [string, string][] = [];
    speaker.on('connectionRefused', (from, why) => refused.push([from, why]));
    // The configured peer's host, dialling from its other address (the kernel's pick).
    const s = net.connect({ host: '127.0.5.51', port, localAddress: '127.0.0.1' });
    const closed = new Promise<void>((resolve) => s.on('close', () => resolve()));
    s.on('error', () => undefined);
    await closed;
    assert.equal(refused.length, 1, 'one event for the one connection');
    const [from, why] = refused[0]!;
    assert.equal(from, '127.0.0.1');
    assert.match(why, /127\.0\.0\.1.*refused: no peer has that address/, 'the address and what happened');
    assert.match(why, /127\.0\.5\.52/, 'the configured peer it may be');
    assert.match(why, /localAddress/, 'the likely fix');
  });

  it('with no peer of its family configured, the fix named is adding one', async () => {
    speaker = new BgpSpeaker({ asn: 65001, routerId: '10.0.0.1', listen: { host: '127.0.5.61', port: 0 } });
    const port = (await speaker.start())!;
    const refused: string[] = [];
    speaker.on('connectionRefused', (_from, why) => refused.push(why));
    const s = net.connect({ host: '127.0.5.61', port, localAddress: '127.0.5.62' });
    s.on('error', () => undefined);
    await new Promise<void>((resolve) => s.on('close', () => resolve()));
    assert.match(refused[0] ?? '', /127\.0\.5\.62 .*refused.*add it as a peer/, `the message: ${refused[0]}`);
  });
});
