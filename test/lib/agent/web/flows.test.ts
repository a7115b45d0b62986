// The flows query (a bad parameter refused by name) and the provider that reads the control
// socket's `/flows`: the list form, and the follow stream cut into arbitrary chunks, ended by
// the caller's signal. The socket here serves the contract's shapes from the test.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FlowRecord, flowQueryParams, flowsFromControl, parseFlowQuery } from '../../../../lib/agent/web/flows.js';

const record = (n: number): FlowRecord => ({
  time: `2026-01-02T03:04:0${n}.000Z`,
  node: 'n1',
  proto: 'tcp',
  src: { ip: '10.65.0.5', port: 40000 + n, namespace: 'shop', pod: 'web-0', labels: { app: 'web' } },
  dst: { ip: '10.65.0.9', port: 80, namespace: 'shop', pod: 'api-0' },
  verdict: n % 2 ? 'deny' : 'allow',
  policy: null,
  staged: null,
  bytes: n,
  packets: 1,
  count: 1,
  start: `2026-01-02T03:04:0${n}.000Z`,
  end: null,
});

describe('web: flow queries and the control socket provider', () => {
  it('takes namespace, pod, verdict, since and follow; refuses anything else naming the parameter', () => {
    assert.deepEqual(parseFlowQuery(new URLSearchParams('namespace=shop&pod=web-0&verdict=deny&follow=1&since=2026-01-02T03:04:05Z')), {
      namespace: 'shop',
      pod: 'web-0',
      verdict: 'deny',
      follow: true,
      since: '2026-01-02T03:04:05.000Z',
    });
    assert.deepEqual(parseFlowQuery(new URLSearchParams('namespace=&verdict=')), { follow: false });
    const refused = (q: string, message: RegExp) => assert.throws(() => parseFlowQuery(new URLSearchParams(q)), message);
    refused('verdict=drop', /^Error: verdict: must be allow or deny, not "drop"/);
    refused('since=yesterday', /^Error: since: must be an ISO 8601 time/);
    refused('follow=yes', /^Error: follow: must be 1 or 0/);
    refused(`pod=${'x'.repeat(254)}`, /^Error: pod: must be a name of at most 253 characters/);
    refused('namespace=a%0Ab', /^Error: namespace: must be a name/);
    refused('limit=5', /^Error: limit: unknown parameter \(known: namespace, pod, verdict, since, follow\)/);
    assert.equal(
      flowQueryParams({ namespace: 'shop', verdict: 'allow', follow: true }).toString(),
      'namespace=shop&verdict=allow&follow=1',
    );
  });

  describe('flowsFromControl', () => {
    let dir: string;
    let server: http.Server;
    let socket: string;
    const asked: string[] = [];
    let streamClosed: Promise<void>;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'podroute-flows-'));
      socket = join(dir, 'node.sock');
      let closed!: () => void;
      streamClosed = new Promise((resolve) => (closed = resolve));
      server = http.createServer((req, res) => {
        asked.push(req.url ?? '');
        const url = new URL(req.url ?? '/', 'http://agent');
        // An agent whose flow logs are off, played by one namespace.
        if (url.pathname !== '/flows' || url.searchParams.get('namespace') === 'off')
          return res.writeHead(404).end('{"error":"flow logs are off"}');
        if (url.searchParams.get('follow') !== '1') {
          res.writeHead(200, { 'content-type': 'application/json' });
          // As the agent's control socket answers (lib/agent/server.ts): an array, oldest first.
          return res.end(JSON.stringify([record(1), record(2)]));
        }
        res.writeHead(200, { 'content-type': 'application/x-ndjson' });
        // Two records cut mid-line across writes, then the stream stays open until the reader leaves.
        const text = `${JSON.stringify(record(3))}\n${JSON.stringify(record(4))}\n`;
        res.write(text.slice(0, 10));
        setTimeout(() => res.write(text.slice(10, text.length - 20)), 20);
        setTimeout(() => res.write(text.slice(text.length - 20)), 40);
        res.on('close', closed);
      });
      await new Promise<void>((resolve) => server.listen(socket, resolve));
    });
    after(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    });

    it('lists the records kept, passing the filter on', async () => {
      const got: FlowRecord[] = [];
      for await (const r of flowsFromControl(socket)({ namespace: 'shop', verdict: 'deny', follow: false }, new AbortController().signal))
        got.push(r);
      assert.deepEqual(got, [record(1), record(2)]);
      assert.equal(asked.at(-1), '/flows?namespace=shop&verdict=deny');
    });

    it('follows the stream record by record, and leaves when the signal aborts', async () => {
      const stop = new AbortController();
      const got: FlowRecord[] = [];
      for await (const r of flowsFromControl(socket)({ follow: true }, stop.signal)) {
        got.push(r);
        if (got.length === 2) stop.abort();
      }
      assert.deepEqual(got, [record(3), record(4)]);
      await streamClosed; // the connection went with the reader
    });

    it('an answer other than 200 fails with its status and text', async () => {
      const off = flowsFromControl(socket)({ namespace: 'off', follow: false }, new AbortController().signal);
      await assert.rejects(async () => {
        for await (const r of off) assert.fail(`a record from an agent with flows off: ${JSON.stringify(r)}`);
      }, /control \/flows: 404 \{"error":"flow logs are off"\}/);
    });
  });
});
