// Scale in one process over loopback: one reflector (in a worker thread, so its heap can be
// measured alone), 200 clients that connect from 127.1.0.x through its client range, each
// originating 4 /26 blocks. Every client must end with all 800 routes, the reflected ones
// carrying ORIGINATOR_ID, CLUSTER_LIST and the originating client's next hop. Prints the
// reflector's heap and the time to converge (recorded in BENCHMARKS.md).
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { BgpSpeaker } from '../../../bgp/index.js';

const CLIENTS = Number(process.env.PODROUTE_RR_SCALE_CLIENTS ?? 200);
const BLOCKS = 4;
const ASN = 64512;
const HOLD = 90; // two cores shared with other test runs: no hold-timer expiry under load

function block(i: number): string {
  const n = (10 << 24) | (64 << 16) | (i * 64);
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}/26`;
}

interface Status {
  heap: number;
  external: number;
  established: number;
  prefixes: number;
  updateGroups: { members: number; routeReflectorClient: boolean }[];
  attributeSets: number;
  sent: number;
}

describe(`reflector scale: 1 reflector, ${CLIENTS} clients × ${BLOCKS} blocks, loopback, one process`, function () {
  this.timeout(240_000);
  let worker: Worker;
  const clients: BgpSpeaker[] = [];
  const messages: Array<{ kind: string } & Record<string, unknown>> = [];
  const next = (kind: string, timeoutMs = 20_000) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`reflector worker: no "${kind}" in ${timeoutMs} ms`)), timeoutMs);
      const check = () => {
        const e = messages.find((m) => m.kind === 'error');
        if (e) return reject(new Error(`reflector worker: ${String(e.error)}`));
        const i = messages.findIndex((m) => m.kind === kind);
        if (i < 0) return void setTimeout(check, 20);
        clearTimeout(t);
        resolve(messages.splice(i, 1)[0]!);
      };
      check();
    });

  after(async () => {
    await Promise.all(clients.map((c) => c.stop('test over').catch(() => undefined)));
    if (worker) {
      worker.postMessage({ kind: 'stop' });
      await next('stopped', 10_000).catch(() => undefined);
      await worker.terminate();
    }
  });

  it('every client ends with all routes; memory and convergence time printed', async () => {
    worker = new Worker(new URL('./scale-reflector.mjs', import.meta.url), {
      workerData: { asn: ASN, range: '127.1.0.0/16', holdTime: HOLD },
    });
    worker.on('message', (m: { kind: string }) => messages.push(m));
    worker.on('error', (e) => messages.push({ kind: 'error', error: e.message }));
    const started = (await next('started')) as { port: number; baseline: number };
    const total = CLIENTS * BLOCKS;

    const t0 = performance.now();
    for (let i = 0; i < CLIENTS; i++) {
      const local = `127.1.${(i + 1) >> 8}.${(i + 1) & 255}`;
      const c = new BgpSpeaker({
        asn: ASN,
        routerId: `10.255.${(i + 1) >> 8}.${(i + 1) & 255}`,
        listen: false,
        rib: { collectChanges: false },
      });
      for (let k = 0; k < BLOCKS; k++) c.originate(block(i * BLOCKS + k));
      c.addPeer({
        address: '127.0.0.1',
        port: started.port,
        asn: ASN,
        localAddress: local,
        holdTime: HOLD,
        connectRetryTime: 1,
        idleHoldTime: 1,
        families: ['ipv4-unicast'],
      });
      clients.push(c);
    }
    const deadline = Date.now() + 200_000;
    let done = 0;
    while (Date.now() < deadline) {
      done = clients.filter((c) => c.rib.stats().prefixes['ipv4-unicast'] === total).length;
      if (done === CLIENTS) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const seconds = (performance.now() - t0) / 1000;
    assert.equal(done, CLIENTS, `clients with all ${total} routes after ${seconds.toFixed(1)} s`);

    worker.postMessage({ kind: 'status' });
    const s = (await next('status')) as unknown as Status;
    const heapMiB = (s.heap - started.baseline) / 2 ** 20;
    const rss = process.memoryUsage().rss / 2 ** 20;
    const line =
      `reflector scale: ${CLIENTS} clients, ${total} routes each: converged in ${seconds.toFixed(2)} s; ` +
      `reflector heap +${heapMiB.toFixed(2)} MiB over its idle baseline (${(s.heap / 2 ** 20).toFixed(1)} MiB total, ` +
      `${((s.heap - started.baseline) / CLIENTS / 1024).toFixed(1)} KiB per client), ` +
      `${s.prefixes} prefixes, ${s.attributeSets} attribute sets, ${s.updateGroups.length} update group(s) ` +
      `[${s.updateGroups.map((g) => g.members).join(', ')} members], ${s.sent} prefixes sent; process RSS ${rss.toFixed(0)} MiB (clients included)`;
    console.log(`      ${line}`);

    assert.equal(s.established, CLIENTS);
    assert.equal(s.prefixes, total);
    assert.equal(s.updateGroups.length, 1, 'all clients share one update group');
    assert.equal(s.updateGroups[0]!.members, CLIENTS);
    assert.equal(s.sent, CLIENTS * (total - BLOCKS), 'each client was sent every route but its own');
    // Spot checks of what the clients hold: the originating client's next hop, ORIGINATOR_ID and CLUSTER_LIST.
    for (const i of [0, Math.floor(CLIENTS / 2), CLIENTS - 1]) {
      const from = (i + 1) % CLIENTS;
      const r = clients[i]!.lookup(block(from * BLOCKS))!.best;
      assert.equal(r.nextHop, `127.1.${(from + 1) >> 8}.${(from + 1) & 255}`);
      assert.equal(r.attributes.originatorId, `10.255.${(from + 1) >> 8}.${(from + 1) & 255}`);
      assert.deepEqual(r.attributes.clusterList, ['127.0.0.1']);
    }
  });
});
