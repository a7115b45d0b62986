// The web page's server over HTTP, with a real agent in this process (memory datastore and
// dataplane, BGP on loopback): GET only, its security headers, the Host check, the documents
// without secrets, and flows through the provider seam (list, filter, follow, limits); without
// a provider, flow logs are off.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '../../../../bgp/session/free-port.js';
import { MemoryDataplane } from '../../../../felix/index.js';
import { NodeAgent } from '../../../../lib/agent/index.js';
import { hostAllowed, MAX_FOLLOWERS, serveWeb } from '../../../../lib/agent/web/server.js';
import { memoryDatastore, type BackendDatastore } from '../../../../lib/datastore/index.js';
import { API_VERSION } from '../../../../lib/resources/index.js';
import { waitFor } from '../../../support/wait.js';
import { FedFlows, record } from './fed-flows.js';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function call(port: number, path: string, options: { method?: string; host?: string; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: options.host ? { host: options.host } : {} },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('web: the agent’s page server', function () {
  this.timeout(60_000);
  let ds: BackendDatastore;
  let agent: NodeAgent;
  const servers: http.Server[] = [];
  let port: number;
  let plain: number;
  const flows = new FedFlows();

  before(async () => {
    ds = memoryDatastore();
    agent = new NodeAgent({
      nodeName: 'w1',
      datastore: ds,
      dataplane: new MemoryDataplane({ links: ['lo'] }),
      ipv4Address: '127.0.0.1/8',
      uplink: 'lo',
      bgpPort: await freePort(),
      felix: { resyncIntervalMs: 0, sysctls: false },
      serviceController: false,
      defaultIpv4Pool: false,
    });
    await agent.start();
    // A peer whose password must never reach a browser, and a mesh password likewise.
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'BGPPeer',
      metadata: { name: 'tor' },
      spec: { peerIP: '127.0.0.9', asNumber: 65010, password: 'peer-secret-1' },
    });
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'BGPConfiguration',
      metadata: { name: 'default' },
      spec: { nodeMeshPassword: 'mesh-secret-2' },
    });
    // One server with flows, one without.
    servers.push(await serveWeb(agent, { port: 0, flows: flows.provider }), await serveWeb(agent, { port: 0 }));
    port = (servers[0]!.address() as AddressInfo).port;
    plain = (servers[1]!.address() as AddressInfo).port;
  });
  after(async () => {
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise((resolve) => s.close(resolve));
    }
    await agent?.stop();
    await ds?.close();
  });

  it('serves the page with a policy that loads nothing but its own files, on 127.0.0.1', async () => {
    assert.equal((servers[0]!.address() as AddressInfo).address, '127.0.0.1');
    const page = await call(port, '/');
    assert.equal(page.status, 200);
    assert.match(page.headers['content-type'] ?? '', /^text\/html/);
    assert.match(String(page.headers['content-security-policy']), /^default-src 'self'(;|$)/);
    assert.equal(page.headers['x-content-type-options'], 'nosniff');
    assert.match(page.body, /<script type="module" src="\/app.js"><\/script>/);
    assert.ok(!/<script>|\sstyle="|\son\w+=/.test(page.body), 'no inline script, style or handler in the page');
    const app = await call(port, '/app.js');
    assert.equal(app.status, 200);
    assert.match(app.headers['content-type'] ?? '', /^text\/javascript/);
    assert.match(app.body, /from "\.\/flows\.js"/);
    assert.equal((await call(port, '/flows.js')).status, 200);
    assert.equal((await call(port, '/style.css')).status, 200);
    assert.equal((await call(port, '/api/nothing')).status, 404);
    assert.equal((await call(port, '/../server.ts')).status, 404);
  });

  it('refuses every method but GET with 405, body or not', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']) {
      for (const path of ['/', '/api/node', '/api/flows']) {
        const a = await call(port, path, { method, body: method === 'POST' ? '{"stop":true}' : undefined });
        assert.equal(a.status, 405, `${method} ${path}`);
        assert.equal(a.headers.allow, 'GET', `${method} ${path}: Allow`);
      }
    }
    assert.ok(agent.ready, 'the agent runs on');
  });

  it('answers to addresses, localhost and the machine’s name only', async () => {
    assert.equal((await call(port, '/api/node', { host: `localhost:${port}` })).status, 200);
    assert.equal((await call(port, '/api/node', { host: `[::1]:${port}` })).status, 200);
    assert.equal((await call(port, '/api/node', { host: `attacker.example:${port}` })).status, 421);
    assert.equal(hostAllowed('node-7.example:8080', 'node-7.example'), true);
    assert.equal(hostAllowed('NODE-7.example.', 'node-7.example'), true);
    assert.equal(hostAllowed(undefined), false);
    assert.equal(hostAllowed('127.0.0.1.attacker.example'), false);
  });

  it('gives the node, its sessions, routes and cluster, with no password anywhere', async () => {
    const node = JSON.parse((await call(port, '/api/node')).body);
    assert.equal(node.node, 'w1');
    assert.equal(node.flows, true);
    const tor = node.sessions.find((s: { address: string }) => s.address === '127.0.0.9');
    assert.ok(tor, `the BGPPeer's session is listed: ${JSON.stringify(node.sessions)}`);
    assert.equal(tor.upSeconds, null, 'a session not Established has no uptime');
    const cluster = JSON.parse((await call(port, '/api/cluster')).body);
    assert.deepEqual(
      cluster.peers.map((p: { id: string }) => p.id),
      ['BGPPeer/tor'],
    );
    const routes = JSON.parse((await call(port, '/api/routes')).body);
    assert.deepEqual(Object.keys(routes).sort(), ['bgp', 'bgpTotal', 'programmed', 'programmedTotal', 'unresolved']);
    for (const path of ['/api/node', '/api/cluster', '/api/routes', '/']) {
      const body = (await call(port, path)).body;
      assert.ok(!body.includes('peer-secret-1') && !body.includes('mesh-secret-2'), `${path} holds a password`);
    }
  });

  it('without a provider, flow logs are off', async () => {
    assert.equal(JSON.parse((await call(plain, '/api/node')).body).flows, false);
    const a = await call(plain, '/api/flows');
    assert.equal(a.status, 404);
    assert.deepEqual(JSON.parse(a.body), { error: 'flow logs are off on this node' });
  });

  it('lists flows through the provider with the filter given; a bad filter is refused by name', async () => {
    flows.kept.push(
      record(1),
      record(2, { verdict: 'deny' }),
      record(3, { src: { ip: '10.65.9.9', namespace: 'other' }, dst: { ip: '1.1.1.1' } }),
    );
    const all = JSON.parse((await call(port, '/api/flows')).body);
    assert.equal(all.flows.length, 3);
    const denied = JSON.parse((await call(port, '/api/flows?namespace=shop&verdict=deny')).body);
    assert.deepEqual(denied, { flows: [record(2, { verdict: 'deny' })] });
    assert.deepEqual(flows.queries.at(-1), { namespace: 'shop', verdict: 'deny', follow: false });
    const bad = await call(port, '/api/flows?verdict=maybe');
    assert.equal(bad.status, 400);
    assert.match(JSON.parse(bad.body).error, /^verdict: must be allow or deny/);
  });

  it('follows flows as one JSON record a line, and the provider is told when the reader leaves', async () => {
    const lines: string[] = [];
    const req = http.get({ host: '127.0.0.1', port, path: '/api/flows?follow=1&verdict=deny' });
    const res = await new Promise<http.IncomingMessage>((resolve) => req.on('response', resolve));
    assert.equal(res.headers['content-type'], 'application/x-ndjson');
    let buffered = '';
    const got = new Promise<void>((resolve) =>
      res.on('data', (c: Buffer) => {
        buffered += c.toString('utf8');
        const parts = buffered.split('\n');
        buffered = parts.pop()!;
        lines.push(...parts);
        if (lines.length >= 2) resolve();
      }),
    );
    await waitUntil(() => flows.open === 1, 'the follower reached the provider');
    flows.push(record(4));
    flows.push(record(5, { verdict: 'deny' }));
    flows.push(record(6, { verdict: 'deny' }));
    await got;
    assert.deepEqual(
      lines.slice(0, 2).map((l) => JSON.parse(l)),
      [record(5, { verdict: 'deny' }), record(6, { verdict: 'deny' })],
    );
    req.destroy();
    await waitUntil(() => flows.open === 0, 'the provider saw the reader leave');
    assert.deepEqual(flows.aborted.at(-1), { verdict: 'deny', follow: true });
  });

  it(`holds at most ${MAX_FOLLOWERS} streams; one more gets 429`, async () => {
    const reqs = Array.from({ length: MAX_FOLLOWERS }, () => http.get({ host: '127.0.0.1', port, path: '/api/flows?follow=1' }));
    try {
      await waitUntil(() => flows.open === MAX_FOLLOWERS, `${MAX_FOLLOWERS} followers`);
      const more = await call(port, '/api/flows?follow=1');
      assert.equal(more.status, 429);
    } finally {
      for (const r of reqs) r.destroy();
    }
    await waitUntil(() => flows.open === 0, 'every follower gone');
    // A place is free again.
    const again = http.get({ host: '127.0.0.1', port, path: '/api/flows?follow=1' });
    await waitUntil(() => flows.open === 1, 'a follower after the others left');
    again.destroy();
    await waitUntil(() => flows.open === 0, 'the last follower gone');
  });
});

function waitUntil(ok: () => boolean, what: string): Promise<boolean> {
  return waitFor(ok, { what, timeoutMs: 5000, intervalMs: 10 });
}
