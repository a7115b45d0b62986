// `podroute policy dump` against an agent's control socket: it prints the table the agent
// answers with, asks for the kernel's with --kernel, and says by its exit status whether the
// kernel differs from what felix meant. (What the agent renders: test/felix/policy/table-dump.test.ts.)
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runPolicyCommand } from '../../../lib/cli/policy.js';

describe('podroute policy dump', () => {
  let dir: string;
  let server: http.Server;
  let socket: string;
  const asked: string[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'policy-dump-'));
    socket = join(dir, 'agent.sock');
    server = http.createServer((req, res) => {
      asked.push(req.url ?? '');
      const kernel = req.url === '/policy/table?kernel=1';
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(
          kernel
            ? { text: '  table inet podroute {\n+ \tchain extra {\n', differs: true }
            : { text: 'table inet podroute {\n', differs: false },
        ),
      );
    });
    await new Promise<void>((resolve) => server.listen(socket, resolve));
  });

  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  const run = async (...argv: string[]) => {
    let out = '';
    let err = '';
    const code = await runPolicyCommand(argv, { stdout: (s) => (out += s), stderr: (s) => (err += s) });
    return { code, out, err };
  };

  it("prints felix's table, exit 0", async () => {
    const r = await run('dump', '--control', socket);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, 'table inet podroute {\n');
    assert.equal(asked.at(-1), '/policy/table');
  });

  it("with --kernel prints the kernel's, marked, and exits 1 when it differs", async () => {
    const r = await run('dump', '--kernel', '--control', socket);
    assert.equal(r.code, 1, r.err);
    assert.match(r.out, /^\+ \tchain extra \{$/m);
    assert.equal(asked.at(-1), '/policy/table?kernel=1');
  });

  it('says so when no agent answers', async () => {
    await assert.rejects(run('dump', '--control', join(dir, 'none.sock')), /control socket .*none\.sock/);
  });
});
