// Floods read from several sockets are applied over several turns of the event loop, a
// bounded amount in each, so that sessions send what changed (and timers run) while they
// last, instead of after one turn that applied every socket's read-ahead.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, connect, type Socket } from 'node:net';
import { encodeMessage } from '../../../bgp/codec/index.js';
import { BgpConnection, TURN_BUDGET } from '../../../bgp/session/connection.js';

const PEERS = 8;
const PER_PEER = 2 * 1024 * 1024;
/** What one socket read hands over at most (Node reads 64 KiB at a time). */
const READ = 64 * 1024;

describe('connection: floods are applied a turn budget at a time', function () {
  this.timeout(30_000);

  it(`applies at most the budget plus one read per socket in a turn, with ${PEERS} peers flooding at once`, async () => {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as { port: number }).port;
    const sockets: Socket[] = [];
    server.on('connection', (s) => sockets.push(s));
    const clients: Socket[] = [];
    for (let i = 0; i < PEERS; i++) {
      const c = connect(port, '127.0.0.1');
      await once(c, 'connect');
      clients.push(c);
    }
    while (sockets.length < PEERS) await new Promise((r) => setImmediate(r));

    // Turns counted by a chain of setImmediate: it runs once per turn of the loop.
    let turn = 0;
    let counting = true;
    const tick = () => {
      turn++;
      if (counting) setImmediate(tick);
    };
    setImmediate(tick);

    const keepalive = encodeMessage({ type: 'keepalive' });
    const perPeer = Math.ceil(PER_PEER / keepalive.length);
    const perTurn = new Map<number, number>();
    let received = 0;
    let done!: () => void;
    const all = new Promise<void>((r) => (done = r));
    const conns = sockets.map(
      (s) =>
        new BgpConnection(s, {
          message: (m) => {
            assert.equal(m.type, 'keepalive');
            perTurn.set(turn, (perTurn.get(turn) ?? 0) + keepalive.length);
            if (++received === PEERS * perPeer) done();
          },
          decodeError: (e) => assert.fail(e),
          closed: () => {},
        }),
    );
    try {
      const flood = Buffer.concat(Array.from({ length: perPeer }, () => keepalive));
      for (const c of clients) c.write(flood);
      await all;
      const most = Math.max(...perTurn.values());
      assert.ok(most <= TURN_BUDGET + PEERS * READ, `${most} octets applied in one turn (budget ${TURN_BUDGET})`);
    } finally {
      counting = false;
      for (const c of conns) c.destroy();
      for (const c of clients) c.destroy();
      server.close();
    }
  });
});
