// Run by test/support/leak-guard.test.ts, not by the suite: a test that leaves an interval and a child.
import { spawn } from 'node:child_process';

describe('leaky', () => {
  it('leaves an interval and a child running', () => {
    setInterval(() => undefined, 1000);
    spawn('sleep', ['300'], { stdio: 'ignore' });
  });
});
