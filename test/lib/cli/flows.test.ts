// `podroute flows` against a control socket that serves GET /flows as the agent does: the
// query it sends, the table, wide and JSON lines, --follow, and the agent's error passed on.
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FlowRecord } from '../../../lib/agent/flow-records.js';
import { runFlowsCommand } from '../../../lib/cli/flows.js';

const rec = (node: string, over: Partial<FlowRecord> = {}): FlowRecord => ({
  time: '2026-01-01T10:00:01.250Z',
  node,
  proto: 'tcp',
  src: { ip: '10.65.0.2', port: 40312, namespace: 'shop', pod: 'web-0', labels: { app: 'web' } },
  dst: { ip: '10.65.0.3', port: 8080, namespace: 'shop', pod: 'db-0', service: 'shop/db', servicePort: 5432 },
  verdict: 'deny',
  policy: { tier: 'security', name: 'security.block', rule: 'ingress/1' },
  staged: null,
  bytes: 0,
  packets: 1,
  count: 3,
  start: '2026-01-01T10:00:01.250Z',
  end: null,
  ...over,
});

describe('podroute flows', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podroute-flows-'));
  const socket = join(dir, 'node.sock');
  const asked: string[] = [];
  const server = http.createServer((req, res) => {
    asked.push(req.url ?? '');
    const url = new URL(req.url ?? '/', 'http://agent');
    if (url.searchParams.get('since') === 'yesterday') {
      res.writeHead(400, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ error: 'since: "yesterday" is not a time (ISO 8601) or a duration like 30s, 5m, 1h' }));
    }
    if (url.searchParams.get('follow') === '1') {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(`${JSON.stringify(rec('n1'))}\n`);
      return setTimeout(() => res.end(`${JSON.stringify(rec('n2'))}\n`), 20);
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify([rec('n1'), rec('n2', { verdict: 'allow', policy: null })]));
  });
  before((done) => {
    server.listen(socket, done);
  });
  after((done) => {
    server.close(() => {
      rmSync(dir, { recursive: true, force: true });
      done();
    });
  });

  const run = async (...argv: string[]) => {
    let out = '';
    let err = '';
    const code = await runFlowsCommand(['--control', socket, ...argv], { stdout: (s) => (out += s), stderr: (s) => (err += s) });
    return { code, out, err };
  };

  it('asks with the filters given and prints one row a record, the Service and the rule named', async () => {
    const r = await run('--namespace', 'shop', '--verdict', 'deny', '--pod', 'web-0', '--since', '5m');
    assert.equal(r.code, 0, r.err);
    assert.equal(asked.at(-1), '/flows?namespace=shop&pod=web-0&verdict=deny&since=5m');
    const lines = r.out.trim().split('\n');
    assert.match(lines[0]!, /^TIME +NODE +PROTO +SOURCE +DESTINATION +VERDICT +POLICY$/);
    assert.match(lines[1]!, /n1 +tcp +shop\/web-0:40312 +shop\/db-0:8080 \(shop\/db:5432\) +DENY +security\/security\.block ingress\/1/);
    assert.match(lines[2]!, /ALLOW +-$/);
  });

  it("--node keeps one node's records; -o json prints one record a line; -o wide adds the counts", async () => {
    const json = await run('--node', 'n2', '-o', 'json');
    assert.deepEqual(
      json.out
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as FlowRecord).node),
      ['n2'],
    );
    const wide = await run('-o', 'wide');
    assert.match(wide.out.split('\n')[0]!, /COUNT +PACKETS +BYTES +STAGED$/);
    assert.match(wide.out.split('\n')[1]!, / 3 +1 +0 +-$/);
  });

  it('--follow prints each record as it comes; an error of the agent is passed on, a bad flag refused', async () => {
    const f = await run('--follow', '-o', 'json');
    assert.equal(asked.at(-1), '/flows?follow=1');
    assert.deepEqual(
      f.out
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as FlowRecord).node),
      ['n1', 'n2'],
    );
    await assert.rejects(run('--since', 'yesterday'), /since: "yesterday" is not a time/);
    const refused = await run('--verdict', 'maybe');
    assert.notEqual(refused.code, 0, 'a verdict other than allow or deny is refused before asking');
    assert.match(refused.err, /verdict/);
  });
});
