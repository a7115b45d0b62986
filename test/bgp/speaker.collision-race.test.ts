// Two speakers that each dial the other, as a user first writes them: many trials, each with
// its peers added at a random offset, so that the two connections cross at every stage (one
// dial still in flight, both OPENs sent, one side in OpenConfirm). Every trial must come up at
// once, never by the connect-retry timer (left at its default, 120 s): that is what a
// collision handled badly falls back to, a session down for two minutes.
import assert from 'node:assert/strict';
import { BgpSpeaker, type NeighborConfig } from '../../index.js';
import { prng } from '../support/prng.js';
import { sleep } from '../support/wait.js';

const TRIALS = 120; // per variant: with and without localAddress
/** Far below the connect-retry timer; above a parked OPEN's longest wait (3 s) with room for a loaded machine. */
const BOUND_MS = 6000;

interface Trial {
  ms: number;
  ok: boolean;
  detail: string;
}

/** One race: A on .41, B on .42 of a loopback /24; A adds its peer `offset` ms before B (after, when negative). */
async function race(net: number, offset: number, aHigher: boolean, localAddress: boolean): Promise<Trial> {
  const ipA = `127.0.${net}.41`;
  const ipB = `127.0.${net}.42`;
  const a = new BgpSpeaker({ asn: 65001, routerId: aHigher ? '10.0.0.2' : '10.0.0.1', listen: { host: ipA, port: 0 } });
  const b = new BgpSpeaker({ asn: 65002, routerId: aHigher ? '10.0.0.1' : '10.0.0.2', listen: { host: ipB, port: 0 } });
  const refused: string[] = [];
  for (const s of [a, b]) s.on('connectionRefused', (from, why) => refused.push(`${from}: ${why}`));
  const pa = (await a.start())!;
  const pb = (await b.start())!;
  const peerOfA: NeighborConfig = { address: ipB, asn: 65002, port: pb, ...(localAddress ? { localAddress: ipA } : {}) };
  const peerOfB: NeighborConfig = { address: ipA, asn: 65001, port: pa, ...(localAddress ? { localAddress: ipB } : {}) };
  const t0 = performance.now();
  const first = offset >= 0 ? () => a.addPeer(peerOfA) : () => b.addPeer(peerOfB);
  const second = offset >= 0 ? () => b.addPeer(peerOfB) : () => a.addPeer(peerOfA);
  first();
  if (Math.abs(offset) >= 1) await sleep(Math.abs(offset));
  else if (offset !== 0) await new Promise((r) => setImmediate(r));
  second();
  const up = () => a.peerStatus()[0]?.state === 'Established' && b.peerStatus()[0]?.state === 'Established';
  while (!up() && performance.now() - t0 < BOUND_MS) await sleep(2);
  const ms = performance.now() - t0;
  const states = [a, b].map((s) => `${s.peerStatus()[0]?.state} (${s.peerStatus()[0]?.lastError || 'no error'})`).join(' / ');
  const ok = up();
  await Promise.all([a.stop(), b.stop()]);
  return { ms, ok, detail: `${states}${refused.length ? `; refused ${refused.join('; ')}` : ''}` };
}

describe('speaker: two speakers that both dial always meet (collision race)', function () {
  this.timeout(TRIALS * 2 * BOUND_MS);

  for (const localAddress of [false, true]) {
    it(`${TRIALS} trials at random offsets, ${localAddress ? 'with' : 'without'} localAddress: every one Established well before the connect-retry timer`, async () => {
      const seed = Number(process.env.RACE_SEED ?? Date.now() % 1e9);
      const rand = prng(seed);
      const times: number[] = [];
      for (let i = 0; i < TRIALS; i++) {
        // Offsets from 0 (the same turn) to 20 ms either way: a loopback connect and OPEN take a
        // millisecond or two, so the crossing falls at a different stage from trial to trial.
        const r = rand();
        const offset = r < 0.15 ? 0 : r < 0.3 ? 0.5 * Math.sign(rand() - 0.5) : (rand() * 40 - 20) * rand();
        const t = await race(100 + (i % 100), offset, rand() < 0.5, localAddress);
        assert.ok(t.ok, `trial ${i} (seed ${seed}, offset ${offset.toFixed(2)} ms) not Established after ${BOUND_MS} ms: ${t.detail}`);
        times.push(t.ms);
      }
      times.sort((x, y) => x - y);
      const median = times[times.length >> 1]!;
      // Most trials take a few milliseconds; a parked OPEN (one side already in OpenConfirm) waits for the peer's word.
      assert.ok(median < 500, `median ${median.toFixed(0)} ms (seed ${seed}); slowest ${times.slice(-3).map((t) => t.toFixed(0))}`);
    });
  }
});
