// A CommonJS consumer. podroute is ES modules only: `await import()` works on every Node it
// supports, and `require()` on Node >= 20.19 and >= 22.12, which load ES modules synchronously.
const assert = require('node:assert/strict');

async function main() {
  const codec = await import('podroute/codec');
  const keepalive = codec.encodeMessage({ type: 'keepalive' });
  assert.equal(keepalive.length, 19);
  assert.deepEqual(codec.decodeMessage(keepalive), { type: 'keepalive' });

  const [major, minor] = process.versions.node.split('.').map(Number);
  const requireEsm = (major === 20 && minor >= 19) || (major === 22 && minor >= 12) || major >= 23;
  if (requireEsm) {
    const required = require('podroute/codec');
    assert.equal(required.encodeMessage, codec.encodeMessage, 'require() and import() give the one module');
    const { parseCidr } = require('podroute/ip');
    assert.equal(typeof parseCidr, 'function');
  }
  process.stdout.write(`cjs ok (require of ES modules: ${requireEsm ? 'yes' : 'no, this Node is older'})\n`);
}

main().catch((e) => {
  process.stderr.write(`${e.stack}\n`);
  process.exit(1);
});
