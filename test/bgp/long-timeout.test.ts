// A timer longer than setTimeout's 24.8 days does not fire at once; a short one fires once; a
// cleared one never does.
import assert from 'node:assert/strict';
import { setLongTimeout } from '../../bgp/long-timeout.js';
import { sleep } from '../support/wait.js';

describe('setLongTimeout', () => {
  it('a wait past 2^31 ms (194 days, the longest long-lived stale time) does not fire at once', async () => {
    let fired = 0;
    const t = setLongTimeout(() => fired++, 0xffffff * 1000);
    await sleep(50);
    t.clear();
    assert.equal(fired, 0);
  });

  it('a short wait fires once; a cleared one never', async () => {
    let fired = 0;
    let cleared = 0;
    setLongTimeout(() => fired++, 10);
    setLongTimeout(() => cleared++, 10).clear();
    await sleep(80);
    assert.equal(fired, 1);
    assert.equal(cleared, 0);
  });
});
