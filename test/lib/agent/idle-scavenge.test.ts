// The idle scavenge: V8's young-generation collection runs once the agent has been quiet a
// moment after its work, and only then: not while work keeps coming, not while a transaction is
// under way, not while the generation is nearly empty. The collections are V8's own, seen
// through perf_hooks.
import assert from 'node:assert/strict';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { IdleScavenger, youngGenerationFill } from '../../../lib/agent/idle-scavenge.js';

/** V8's collections of each kind while `body` runs (and the entries arrive after it). */
async function collections(body: () => Promise<void>): Promise<{ minor: number; major: number }> {
  const seen = { minor: 0, major: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) seen.minor++;
      else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) seen.major++;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  try {
    await body();
    // perf_hooks hands the entries over on a timer after the pause.
    await sleep(50);
  } finally {
    observer.disconnect();
  }
  return seen;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('agent idle scavenge', () => {
  it('the young generation is collected in the quiet after work, when it is full enough, and the whole heap is not', async () => {
    const scavenger = new IdleScavenger({ quietMs: 2, fill: 0 });
    try {
      const seen = await collections(async () => {
        for (let i = 0; i < 3; i++) {
          scavenger.workDone();
          await sleep(30);
        }
      });
      assert.equal(scavenger.runs, 3, 'three quiets after work: three scavenges');
      assert.ok(seen.minor >= 3, `V8 reports the young generation collected each time (minor ${seen.minor})`);
      // One of V8's own may fall in the window; a scavenge that collected the whole heap would be three.
      assert.ok(seen.major < 3, `the old generation is not collected by them (major ${seen.major})`);
    } finally {
      scavenger.close();
    }
  });

  it('work that keeps coming within the quiet period puts the scavenge off until it stops', async () => {
    const scavenger = new IdleScavenger({ quietMs: 20, fill: 0 });
    try {
      for (let i = 0; i < 8; i++) {
        scavenger.workDone();
        await sleep(5);
      }
      assert.equal(scavenger.runs, 0, 'no scavenge while work came every 5 ms');
      await sleep(60);
      assert.equal(scavenger.runs, 1, 'one scavenge once the work stopped');
    } finally {
      scavenger.close();
    }
  });

  it('no scavenge while a transaction is under way, nor while the young generation is emptier than asked', async () => {
    let busy = true;
    const waiting = new IdleScavenger({ quietMs: 2, fill: 0, busy: () => busy });
    const neverFull = new IdleScavenger({ quietMs: 2, fill: 1.01 });
    try {
      waiting.workDone();
      neverFull.workDone();
      await sleep(20);
      assert.equal(waiting.runs, 0, 'busy: the scavenge waits for the work that ends it');
      assert.equal(neverFull.runs, 0, 'a generation below the fill asked for is left to V8');
      busy = false;
      waiting.workDone();
      await sleep(20);
      assert.equal(waiting.runs, 1, 'the next quiet after the work ended runs it');
    } finally {
      waiting.close();
      neverFull.close();
    }
  });

  it("the young generation's fill reads between 0 and 1 and grows with what is allocated", () => {
    const before = youngGenerationFill();
    const kept: object[] = [];
    for (let i = 0; i < 2_000; i++) kept.push({ i });
    const after = youngGenerationFill();
    assert.ok(before >= 0 && before <= 1 && after >= 0 && after <= 1, `fills in [0, 1]: ${before}, ${after}`);
    // A scavenge between the reads would empty it; 2,000 small objects do not fill 1 MB.
    assert.ok(after > before, `fill grew with ${kept.length} objects: ${before} → ${after}`);
  });
});
