// A peer's TCP-MD5 password in bgpd's and the reflector's files: the text, or `{ file }` /
// `{ env }` so the secret stays out of the file; every mistake names its field and never the
// password. And a daemon whose TCP-MD5 addon is missing refuses a peer with a password, exiting
// before it listens, rather than running the session unsigned.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseBgpdConfig } from '../../../lib/bgpd/config.js';
import { password } from '../../../lib/bgpd/password.js';
import { parseReflectorConfig } from '../../../lib/bgpd/reflector-config.js';
import { listening, podroute } from '../../support/daemon.js';
import { freePort } from '../../../bgp/session/free-port.js';

const head = 'asn: 65001\nrouterId: 10.0.0.1\n';

describe('bgpd: peers[].password', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'podroute-password-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('as text, from a file (one trailing newline dropped) and from the environment', () => {
    const file = join(dir, 'frr-key');
    writeFileSync(file, 'from a file\n');
    const c = parseBgpdConfig(
      `${head}peers:\n  - { address: 10.0.0.2, asn: 65002, password: plain }\n  - { address: 10.0.0.3, asn: 65003, password: { file: ${file} } }\n`,
    );
    assert.deepEqual(
      c.peers.map((p) => p.password),
      ['plain', 'from a file'],
    );
    assert.equal(password({ env: 'PEER_KEY' }, 'p', { PEER_KEY: 'from the environment' }), 'from the environment');
  });

  it('the reflector reads it the same way', () => {
    const c = parseReflectorConfig(`${head}clusterId: 10.0.0.1\nclients:\n  - { address: 10.0.0.2, password: rr-key }\n`);
    assert.equal(c.peers[0]!.password, 'rr-key');
  });

  it('mistakes name the field and never show the password', () => {
    const cases: [unknown, RegExp][] = [
      [{ file: join(dir, 'missing') }, /^peers\[0\]\.password\.file: ENOENT: no such file or directory/],
      [{ env: 'PODROUTE_TEST_UNSET_KEY' }, /^peers\[0\]\.password\.env: PODROUTE_TEST_UNSET_KEY is not set$/],
      [{ env: 'A', file: 'b' }, /^peers\[0\]\.password: a string, \{ file: PATH \} or \{ env: NAME \}$/],
      [{ secret: 'x' }, /^peers\[0\]\.password\.secret: unknown field$/],
      [{ env: 'not a name' }, /^peers\[0\]\.password\.env: an environment variable name$/],
      ['', /^peers\[0\]\.password: the password is empty$/],
      [42, /^peers\[0\]\.password: a string/],
      ['k'.repeat(81), /^peers\[0\]\.password: the password has 81 octets \(TCP-MD5 keys are at most 80\)$/],
    ];
    for (const [value, message] of cases) {
      assert.throws(
        () => parseBgpdConfig(`${head}peers:\n  - { address: 10.0.0.2, asn: 65002, password: ${JSON.stringify(value)} }\n`),
        (e: Error) => message.test(e.message) && !e.message.includes('kkkk'),
        JSON.stringify(value),
      );
    }
    const empty = join(dir, 'empty-key');
    writeFileSync(empty, '\n');
    assert.throws(() => password({ file: empty }, 'p'), /p\.file \(.*empty-key\): the password is empty$/);
  });

  it('without the TCP-MD5 addon: bgpd exits 1 naming the peer and the addon, before it listens', async () => {
    const port = await freePort();
    const file = join(dir, `no-addon-${port}.yaml`);
    writeFileSync(
      file,
      `${head}listen: { host: 127.0.0.1, port: ${port} }\npeers:\n  - { address: 10.0.0.3, asn: 65003 }\n  - { address: 10.0.0.2, asn: 65002, password: k }\n`,
    );
    const before = process.env.PODROUTE_TCP_MD5_ADDON;
    process.env.PODROUTE_TCP_MD5_ADDON = join(dir, 'no-such-addon.node');
    let exit: Awaited<ReturnType<typeof podroute>>;
    try {
      exit = await podroute(['bgpd', '--config', file]);
    } finally {
      if (before === undefined) delete process.env.PODROUTE_TCP_MD5_ADDON;
      else process.env.PODROUTE_TCP_MD5_ADDON = before;
    }
    assert.equal(exit.code, 1, exit.stderr);
    assert.match(exit.stderr, /peers\[1\]: peer 10\.0\.0\.2 password: the TCP-MD5 addon is not available at .*no-such-addon\.node/);
    assert.match(exit.stderr, /npm run build:native/);
    assert.doesNotMatch(exit.stderr, /"event":"started"/);
    assert.equal(await listening(port), false);
  });
});
