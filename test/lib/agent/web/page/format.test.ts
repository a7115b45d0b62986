// The page's words for states, durations, session types and labels.
import assert from 'node:assert/strict';
import { duration, labelTexts, sessionType, stateClass } from '../../../../../lib/agent/web/page/format.js';

describe('web page: text and colours', () => {
  it('colours Established, the opening states, the rest, and the unknown apart', () => {
    assert.deepEqual(['Established', 'Connect', 'Active', 'OpenSent', 'OpenConfirm', 'Idle', undefined].map(stateClass), [
      'state-established',
      'state-opening',
      'state-opening',
      'state-opening',
      'state-opening',
      'state-down',
      'state-unknown',
    ]);
  });

  it('says how long in the two largest units', () => {
    assert.deepEqual([null, 0, 12, 250, 7500, 3 * 86400 + 4 * 3600 + 5].map(duration), ['', '0s', '12s', '4m 10s', '2h 5m', '3d 4h']);
  });

  it('names session types as node status does, and sorts labels by key', () => {
    assert.equal(sessionType('mesh'), 'node-to-node mesh');
    assert.equal(sessionType('rr-client'), 'rr client');
    assert.equal(sessionType('other'), 'other');
    assert.deepEqual(labelTexts({ b: '2', a: '<i>1</i>' }), ['a=<i>1</i>', 'b=2']);
    assert.deepEqual(labelTexts(undefined), []);
  });
});
