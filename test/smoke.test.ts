import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';

describe('podroute CLI', () => {
  it('prints usage and exits 0 on help', () => {
    const out = execFileSync('node', ['bin/podroute.js', 'help'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    assert.equal(out, '');
  });
});
