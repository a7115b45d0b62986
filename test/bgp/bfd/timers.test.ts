// One Node timer per session: restarts that only move a deadline later cost nothing, and a
// timer fires once, at its last deadline.
import assert from 'node:assert/strict';
import type { BfdEvent } from '../../../bgp/bfd/index.js';
import { SessionTimers } from '../../../bgp/bfd/timers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('BFD session timers', () => {
  it('a detection timer restarted by every packet fires once, a detection time after the last restart', async () => {
    const fired: { e: BfdEvent['type']; at: number }[] = [];
    const t = new SessionTimers((e) => fired.push({ e: e.type, at: performance.now() }));
    let last = 0;
    for (let i = 0; i < 5; i++) {
      t.apply({ type: 'startTimer', timer: 'DetectionTimer', ms: 60 });
      last = performance.now();
      await sleep(20);
    }
    await sleep(150);
    assert.deepEqual(
      fired.map((f) => f.e),
      ['DetectionTimerExpired'],
    );
    assert.ok(fired[0].at - last >= 59, `not before the last deadline: ${(fired[0].at - last).toFixed(1)} ms`);
    t.stopAll();
  });

  it('a stopped timer does not fire, and the other one still does', async () => {
    const fired: string[] = [];
    const t = new SessionTimers((e) => fired.push(e.type));
    t.apply({ type: 'startTimer', timer: 'DetectionTimer', ms: 20 });
    t.apply({ type: 'startTimer', timer: 'TransmitTimer', ms: 40 });
    t.apply({ type: 'stopTimer', timer: 'DetectionTimer' });
    await sleep(100);
    assert.deepEqual(fired, ['TransmitTimerExpired']);
    t.stopAll();
  });

  it('a timer restarted sooner than the one armed fires at the sooner deadline', async () => {
    const fired: number[] = [];
    const t0 = performance.now();
    const t = new SessionTimers(() => fired.push(performance.now() - t0));
    t.apply({ type: 'startTimer', timer: 'TransmitTimer', ms: 500 });
    t.apply({ type: 'startTimer', timer: 'TransmitTimer', ms: 20 });
    await sleep(200);
    assert.equal(fired.length, 1, 'fired once');
    assert.ok(fired[0] < 150, `at the sooner deadline: ${fired[0].toFixed(0)} ms`);
    t.stopAll();
  });
});
