// A bgpd peer's `bfd`: on, off, or its timers in milliseconds; each mistake named by its path.
import assert from 'node:assert/strict';
import { parseBgpdConfig } from '../../../lib/bgpd/config.js';
import { ConfigError } from '../../../lib/bgpd/fields.js';

const base = 'asn: 64512\nrouterId: 10.0.0.1\npeers:\n';

function mistakes(text: string): string[] {
  try {
    parseBgpdConfig(text);
  } catch (e) {
    assert.ok(e instanceof ConfigError, `a ConfigError, not ${String(e)}`);
    return (e as ConfigError).message
      .split('\n')
      .filter((l) => l.includes(':'))
      .map((l) => l.trim());
  }
  return [];
}

describe('bgpd config: bfd per peer', () => {
  it('true, false, and the timers as the speaker takes them', () => {
    const c = parseBgpdConfig(
      `${base}  - { address: 10.0.0.2, asn: 65002, bfd: true }\n  - { address: 10.0.0.3, asn: 65002, bfd: { enabled: false, minTxInterval: 50 } }\n` +
        '  - { address: 10.0.0.4, asn: 65002, bfd: { minTxInterval: 100, minRxInterval: 150, multiplier: 4 } }\n' +
        '  - { address: 10.0.0.5, asn: 65002, bfd: { enabled: true } }\n',
    );
    assert.deepEqual(
      c.peers.map((p) => p.bfd),
      [true, false, { minTxInterval: 100, minRxInterval: 150, multiplier: 4 }, {}],
    );
  });

  it('each mistake named by its path', () => {
    const found = mistakes(
      `${base}  - { address: 10.0.0.2, asn: 1, bfd: { minTxInterval: 0, multiplier: 2.5, interval: 3 } }\n  - { address: 10.0.0.3, asn: 1, bfd: yes }\n` +
        '  - { address: 10.0.0.4, asn: 1, bfd: { enabled: "on" } }\n',
    );
    const text = found.join('\n');
    assert.match(text, /peers\[0\]\.bfd: unknown field "interval"|peers\[0\]\.bfd\.interval/, text);
    assert.match(text, /peers\[1\]\.bfd: true, false or \{ enabled, minTxInterval, minRxInterval, multiplier \}/, text);
    assert.match(text, /peers\[2\]\.bfd\.enabled: "on" is not true or false/, text);
  });

  it('the timers checked one by one', () => {
    assert.match(
      mistakes(`${base}  - { address: 10.0.0.2, asn: 1, bfd: { minTxInterval: 0 } }\n`).join('\n'),
      /peers\[0\]\.bfd\.minTxInterval: 0 is not a number in 1\.\.60000/,
    );
    assert.match(
      mistakes(`${base}  - { address: 10.0.0.2, asn: 1, bfd: { multiplier: 2.5 } }\n`).join('\n'),
      /peers\[0\]\.bfd\.multiplier: 2\.5 is not a whole number/,
    );
  });
});
