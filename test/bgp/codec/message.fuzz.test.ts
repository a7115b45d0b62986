import assert from 'node:assert/strict';
import { encodeMessage } from '../../../index.js';
import { fuzzCodec, sampleMessages } from '../../support/codec-fuzz.js';

const MRT = new URL('../../data/updates.20190101.0000.gz', import.meta.url).pathname;

describe('codec mutation fuzzing (bounded; bench/fuzz-codec.ts runs longer)', function () {
  this.timeout(120_000);
  it('lets only BgpError escape from 30,000 corrupted real messages', () => {
    const open = encodeMessage({
      type: 'open',
      version: 4,
      myAs: 65001,
      holdTime: 90,
      bgpId: '10.0.0.1',
      capabilities: [
        { kind: 'multiprotocol', afi: 1, safi: 1 },
        { kind: 'graceful-restart', restartFlags: 8, restartTime: 120, families: [{ afi: 1, safi: 1, flags: 0x80 }] },
        { kind: 'fqdn', hostname: 'a', domain: '' },
      ],
    });
    const notification = encodeMessage({ type: 'notification', code: 6, subcode: 2, data: Buffer.alloc(0), shutdownCommunication: 'bye' });
    const messages = sampleMessages(MRT, 50, [open, notification, encodeMessage({ type: 'route-refresh', afi: 1, safi: 1, subtype: 1 })]);
    const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
    const r = fuzzCodec(messages, 30_000, seed);
    assert.ok(r.decoded > 1000 && r.rejected > 1000, `both paths exercised (seed ${seed}): ${JSON.stringify(r)}`);
  });
});
