// BFD sessions over real UDP sockets on loopback: the three-way handshake, the source port and
// TTL of RFC 5881, detection of a silent neighbour, Poll/Final for a timer change, IPv6, and
// 1,000 sessions at once. Two endpoints in one process listen on two ports (tests only); the
// kernel's loopback is the wire. Each case runs with the sessions on the main event loop (Bfd)
// and on their own thread (BfdWorker, what the speaker uses by default).
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import {
  Bfd,
  BfdDiag,
  BfdWorker,
  decodeControlPacket,
  encodeControlPacket,
  type BfdControlPacket,
  type BfdEndpoint,
  type BfdOptions,
  type BfdSessionHandle,
} from '../../../bgp/bfd/index.js';
import { freePort } from '../../../bgp/session/free-port.js';
import { waitFor } from '../../support/wait.js';

const FAST = { minTxInterval: 100, minRxInterval: 100, multiplier: 3 };

const KINDS: [string, (o: BfdOptions) => BfdEndpoint][] = [
  ['on the main event loop', (o) => new Bfd(o)],
  ['on their own thread', (o) => new BfdWorker(o)],
];

function up(s: BfdSessionHandle, what: string, timeoutMs = 15_000): Promise<unknown> {
  return waitFor(() => s.state, { what, until: (v) => v === 'Up', timeoutMs, intervalMs: 10 });
}

/** A bare UDP socket playing the remote: it sends what the test says, at the TTL the test says. */
async function bareRemote(
  address: string,
  ttl: number,
): Promise<{ socket: dgram.Socket; received: { packet: BfdControlPacket; port: number }[] }> {
  const socket = dgram.createSocket(address.includes(':') ? 'udp6' : 'udp4');
  const received: { packet: BfdControlPacket; port: number }[] = [];
  socket.on('message', (m, r) => {
    const d = decodeControlPacket(m);
    if (d.packet) received.push({ packet: d.packet, port: r.port });
  });
  await new Promise<void>((resolve) => socket.bind(0, address, resolve));
  socket.setTTL(ttl);
  return { socket, received };
}

function down(your = 0): BfdControlPacket {
  return {
    diag: 0,
    state: your === 0 ? 'Down' : 'Up',
    poll: false,
    final: false,
    controlPlaneIndependent: false,
    authenticationPresent: false,
    demand: false,
    multipoint: false,
    detectMult: 3,
    myDiscriminator: 77,
    yourDiscriminator: your,
    desiredMinTxInterval: 100_000,
    requiredMinRxInterval: 100_000,
    requiredMinEchoRxInterval: 0,
  };
}

for (const [kind, make] of KINDS)
  describe(`BFD endpoint (RFC 5880 over RFC 5881 single hop), sessions ${kind}`, function () {
    this.timeout(60_000);
    const open: BfdEndpoint[] = [];
    // Cases whose code is the same on a thread (the source port, Poll/Final, 1,000 sessions: the
    // bench runs those on the thread) run once, on the main loop: a thread's start costs a second.
    const mainLoopOnly = kind === KINDS[0]![0] ? it : it.skip;
    async function pair(): Promise<[BfdEndpoint, BfdEndpoint, number, number]> {
      const pa = await freePort();
      const pb = await freePort();
      return [make({ port: pa, remotePort: pb }), make({ port: pb, remotePort: pa }), pa, pb];
    }
    /** Two endpoints with one session between them, 127.0.0.1 and 127.0.0.2 at 100 ms × 3, Up at both ends. */
    async function upPair(): Promise<{ a: BfdEndpoint; b: BfdEndpoint; sa: BfdSessionHandle; sb: BfdSessionHandle }> {
      const [a, b] = await pair();
      open.push(a, b);
      const sa = a.add({ peer: '127.0.0.2', localAddress: '127.0.0.1', ...FAST });
      const sb = b.add({ peer: '127.0.0.1', localAddress: '127.0.0.2', ...FAST });
      await up(sa, 'A Up');
      await up(sb, 'B Up');
      return { a, b, sa, sb };
    }
    const sockets: dgram.Socket[] = [];
    afterEach(async () => {
      await Promise.all(open.splice(0).map((b) => b.close()));
      for (const s of sockets.splice(0)) s.close();
    });

    it('two endpoints reach Up by the three-way handshake, at the agreed 100 ms, both families', async () => {
      const [a, b] = await pair();
      open.push(a, b);
      const v4 = [
        a.add({ peer: '127.0.0.2', localAddress: '127.0.0.1', ...FAST }),
        b.add({ peer: '127.0.0.1', localAddress: '127.0.0.2', ...FAST }),
      ];
      const v6 = [a.add({ peer: '::1', ...FAST }), b.add({ peer: '::1', ...FAST })];
      for (const s of [...v4, ...v6]) await up(s, `${s.peer} Up`);
      // Up can come on the remote's Init, before its Up and its Poll for 100 ms arrive.
      for (const s of [...v4, ...v6]) {
        await waitFor(() => s.status(), {
          what: `${s.peer}: the remote says Up, detection time 3 × 100 ms`,
          until: (st) => st.remoteState === 'Up' && st.detectionTime === 300,
          timeoutMs: 3000,
          intervalMs: 10,
        });
      }
      // Reaching Up announces 100 ms instead of the slow start's 1 s with a Poll; the Final ends it.
      await waitFor(() => v4[0].variables.polling, {
        what: 'the Poll of Up to end with a Final',
        until: (v) => !v,
        timeoutMs: 3000,
        intervalMs: 20,
      });
      assert.equal(v4[0].status().transmitInterval, 100, 'sending at the agreed 100 ms');
    });

    mainLoopOnly('RFC 5881 §4: packets go to the given port from one source port of 49152–65535', async () => {
      const remote = await bareRemote('127.0.0.3', 255);
      sockets.push(remote.socket);
      const bfd = make({ port: await freePort(), remotePort: (remote.socket.address() as { port: number }).port });
      open.push(bfd);
      bfd.add({ peer: '127.0.0.3', ...FAST });
      await waitFor(() => remote.received.length, { what: 'two packets', until: (n) => n >= 2, timeoutMs: 5000, intervalMs: 20 });
      const ports = new Set(remote.received.map((r) => r.port));
      assert.equal(ports.size, 1, `one source port for the session: ${[...ports]}`);
      const [port] = ports;
      assert.ok(port >= 49152 && port <= 65535, `source port ${port} in 49152..65535`);
      assert.equal(remote.received[0].packet.state, 'Down');
      assert.equal(remote.received[0].packet.desiredMinTxInterval, 1_000_000, 'slow start: 1 s until Up (§6.8.3)');
    });

    it('RFC 5881 §5: a packet that arrives with a TTL below 255 is dropped; at 255 it counts', async () => {
      const port = await freePort();
      const bfd = make({ port, remotePort: 9 });
      open.push(bfd);
      const s = bfd.add({ peer: '127.0.0.4', ...FAST });
      await bfd.ready();
      const far = await bareRemote('127.0.0.4', 254);
      sockets.push(far.socket);
      for (let i = 0; i < 5; i++) far.socket.send(encodeControlPacket(down()), port, '127.0.0.1');
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(s.packetsIn, 0, 'TTL 254: the kernel dropped every packet');
      assert.equal(s.state, 'Down');
      far.socket.setTTL(255);
      far.socket.send(encodeControlPacket(down()), port, '127.0.0.1');
      await waitFor(() => s.state, { what: 'Init from the TTL 255 packet', until: (v) => v === 'Init', timeoutMs: 2000, intervalMs: 10 });
    });

    it('§6.8.6: a packet from an address with no session, or with a discriminator of another peer, is discarded', async () => {
      const port = await freePort();
      const bfd = make({ port, remotePort: 9 });
      open.push(bfd);
      const s = bfd.add({ peer: '127.0.0.5', ...FAST });
      await bfd.ready();
      const reasons: string[] = [];
      bfd.on('discarded', (_from, why) => reasons.push(why));
      const stranger = await bareRemote('127.0.0.6', 255);
      sockets.push(stranger.socket);
      stranger.socket.send(encodeControlPacket(down()), port, '127.0.0.1');
      stranger.socket.send(encodeControlPacket(down(s.localDiscriminator)), port, '127.0.0.1');
      stranger.socket.send(Buffer.alloc(10), port, '127.0.0.1');
      await waitFor(() => reasons.length, { what: 'three discards', until: (n) => n === 3, timeoutMs: 2000, intervalMs: 10 });
      assert.match(reasons.join('; '), /no session with this neighbour.*belongs to peer 127\.0\.0\.5.*shorter/);
      assert.equal(s.packetsIn, 0);
    });

    it('§6.8.4: a neighbour that falls silent is Down within the detection time, diagnostic 1', async () => {
      const { sa, sb } = await upPair();
      await waitFor(() => sa.variables.polling || sb.variables.polling, {
        what: 'the Polls to end',
        until: (v) => !v,
        timeoutMs: 3000,
        intervalMs: 20,
      });
      const downAt = new Promise<[number, number]>((resolve) => sa.once('state', (_to, _from, diag) => resolve([performance.now(), diag])));
      const silentAt = performance.now();
      sb.dispose(); // B stops sending without a word, as a dead host does
      const [at, diag] = await downAt;
      const took = at - silentAt;
      assert.equal(diag, BfdDiag.CONTROL_DETECTION_TIME_EXPIRED);
      assert.ok(took <= 400, `Down ${took.toFixed(0)} ms after the last packet could have left (detection time 300 ms)`);
    });

    it('§6.8.16 and RFC 5882 §3.2: a session released by its last client tells the remote AdminDown (diagnostic 3 there)', async () => {
      const { b, sa, sb } = await upPair();
      const again = b.add({ peer: '127.0.0.1', localAddress: '127.0.0.2', ...FAST });
      assert.equal(again, sb, 'a second client shares the session');
      b.release(sb);
      assert.equal(sb.state, 'Up', 'one client still holds it');
      b.release(sb);
      await waitFor(() => sa.variables.remoteSessionState, {
        what: 'the remote AdminDown',
        until: (v) => v === 'AdminDown',
        timeoutMs: 2000,
        intervalMs: 10,
      });
      assert.equal(sa.state, 'Down');
      assert.equal(sa.variables.localDiag, BfdDiag.NEIGHBOR_SIGNALED_SESSION_DOWN);
    });

    mainLoopOnly('§6.8.3: new timers on an Up session are announced by Poll/Final and change both sides without a flap', async () => {
      const { a, sa, sb } = await upPair();
      a.add({ peer: '127.0.0.2', localAddress: '127.0.0.1', minTxInterval: 250, minRxInterval: 200, multiplier: 5 });
      await waitFor(() => sb.status().detectionTime, {
        what: "B's detection time to follow A's 5 × 250 ms",
        until: (v) => v === 1250,
        timeoutMs: 3000,
        intervalMs: 20,
      });
      await waitFor(() => sa.status().transmitInterval, {
        what: 'A to send at 250 ms after the Final',
        until: (v) => v === 250,
        timeoutMs: 3000,
        intervalMs: 20,
      });
      assert.equal(sb.status().transmitInterval, 200, "B sends no faster than A's Required Min RX");
      assert.equal(sa.upCount + sb.upCount, 2, 'no flap');
      assert.equal(sa.state, 'Up');
    });

    mainLoopOnly('1,000 sessions at 300 ms come Up and stay Up without a flap, on a fraction of a core', async function () {
      this.timeout(120_000);
      const [a, b] = await pair();
      open.push(a, b);
      const N = 1000;
      const as: BfdSessionHandle[] = [];
      const bs: BfdSessionHandle[] = [];
      // Both ends in one process, on a machine the suite shares: a multiplier of 10 (3 s) keeps
      // a scheduler's stall of the whole process from reading as a failure of the path; the
      // packets still flow at 300 ms. bench/bfd.ts measures 300 ms × 3 against FRR's bfdd.
      const timers = { minTxInterval: 300, minRxInterval: 300, multiplier: 10 };
      // A pair of addresses per session. With both ends in one loop, one socket taking every
      // session's packets would be read 32 datagrams a turn (libuv's share) beside a thousand
      // sockets of the other end; bench/bfd.ts runs the one-socket case against FRR.
      for (let i = 0; i < N; i++) {
        const near = `127.1.${i >> 7}.${(i & 0x7f) + 1}`;
        const far = `127.2.${i >> 7}.${(i & 0x7f) + 1}`;
        as.push(a.add({ peer: far, localAddress: near, ...timers }));
        bs.push(b.add({ peer: near, localAddress: far, ...timers }));
      }
      await waitFor(() => as.filter((s) => s.isUp).length + bs.filter((s) => s.isUp).length, {
        what: 'every session Up',
        until: (n) => n === 2 * N,
        timeoutMs: 60_000,
        intervalMs: 200,
      });
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, 5000));
      const cpu = process.cpuUsage(cpu0);
      const wall = performance.now() - t0;
      const flaps = [...as, ...bs].filter((s) => s.upCount !== 1 || !s.isUp).length;
      assert.equal(flaps, 0, `${flaps} sessions went down or came up twice`);
      const load = (cpu.user + cpu.system) / 1000 / wall;
      // Both ends of 1,000 sessions in this one process: some 6,700 packets a second each way.
      assert.ok(load < 0.9, `one core's ${Math.round(load * 100)} % for 2 × 1,000 sessions: no busy loop`);
    });
  });
