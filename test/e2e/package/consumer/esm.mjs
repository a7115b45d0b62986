// An ES module consumer: the codec from its own subpath, then the root export. Run with
// --import ./trace.mjs; it prints what each import loaded, for the test to judge.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { decodeMessage, encodeMessage } from 'podroute/codec';

const loaded = () => readFileSync(process.env.PODROUTE_TRACE, 'utf8').split('\n').filter(Boolean);

const update = {
  type: 'update',
  withdrawn: [],
  attributes: { origin: 'igp', asPath: [{ type: 'sequence', asns: [65001] }], nextHop: '192.0.2.1' },
  nlri: [{ prefix: '10.0.0.0/24', pathId: undefined }],
};
const wire = encodeMessage(update, { fourOctetAs: true });
assert.equal(wire.subarray(0, 16).toString('hex'), 'ff'.repeat(16), 'the marker');
assert.deepEqual(decodeMessage(wire, { fourOctetAs: true }), update);
process.stdout.write(`codec-loaded ${JSON.stringify(loaded())}\n`);

const root = await import('podroute');
assert.equal(typeof root.BgpSpeaker, 'function');
assert.equal(root.encodeMessage, encodeMessage, 'the root and the subpath are one module');
process.stdout.write(`root-loaded ${JSON.stringify(loaded())}\n`);
process.stdout.write('esm ok\n');
