// The page's flow view in a real browser (Debian's headless Chromium through puppeteer-core),
// served by a real agent in this process whose flow provider the test feeds: the records kept
// and then live ones appear, a filter reaches the provider and ends the stream it replaces,
// labels and names written as markup show as text, and without a provider the page says flow
// logs are off. The screenshot is kept in test-artifacts/web-page/flows.png.
import assert from 'node:assert/strict';
import type http from 'node:http';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { freePort } from '../../../../../bgp/session/free-port.js';
import { MemoryDataplane } from '../../../../../felix/index.js';
import { NodeAgent } from '../../../../../lib/agent/index.js';
import { serveWeb } from '../../../../../lib/agent/web/server.js';
import { memoryDatastore, type BackendDatastore } from '../../../../../lib/datastore/index.js';
import { openBrowser, openPage, type HeadlessBrowser } from '../../../../support/browser.js';
import { ROOT } from '../../../../support/node-agents.js';
import { waitFor } from '../../../../support/wait.js';
import { FedFlows, record } from '../fed-flows.js';

const ARTIFACTS = join(ROOT, 'test-artifacts/web-page');
const XSS = `<img src=x onerror="document.title='pwned'">`;

/** The flow table's rows, each as its cells' text. */
function flowRows(page: Page): Promise<string[][]> {
  return page.$$eval('#flows tbody tr', (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent ?? '')));
}

describe('web page: flows in a real browser', function () {
  this.timeout(90_000);
  let dir: string;
  let ds: BackendDatastore;
  let agent: NodeAgent;
  let browser: HeadlessBrowser | undefined;
  const servers: http.Server[] = [];
  const flows = new FedFlows();
  const problems: string[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'podroute-web-flows-'));
    mkdirSync(ARTIFACTS, { recursive: true });
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
    const started = agent.start();
    browser = await openBrowser({ dir });
    await started;
    servers.push(await serveWeb(agent, { port: 0, flows: flows.provider }), await serveWeb(agent, { port: 0 }));
  });
  after(async () => {
    await browser?.close();
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise((resolve) => s.close(resolve));
    }
    await agent?.stop();
    await ds?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const open = (server: http.Server): Promise<Page> =>
    openPage(browser!, `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, { problems });

  it('shows the records kept, then live ones as they come; markup in names and labels stays text', async () => {
    flows.kept.push(
      record(1),
      record(2, {
        verdict: 'deny',
        policy: { tier: 'security', name: 'deny-db', rule: 'ingress/0' },
        src: { ip: '10.65.0.2', port: 40000, namespace: 'shop', pod: '<b>bold</b>', labels: { app: XSS } },
      }),
    );
    const page = await open(servers[0]!);
    await page.waitForFunction(() => document.querySelectorAll('#flows tbody tr').length === 2, { timeout: 10_000 });
    await waitFor(() => flows.open, { what: 'the page following flows', until: (n) => n === 1, timeoutMs: 5000 });
    flows.push(
      record(7, {
        verdict: 'allow',
        dst: { ip: '10.96.0.10', port: 80, namespace: 'shop', pod: 'api-1', service: 'shop/api', servicePort: 80 },
      }),
    );
    // Drawn 50 ms after it arrives; the bound leaves room for a loaded machine.
    await page.waitForFunction(() => document.querySelectorAll('#flows tbody tr').length === 3, { timeout: 2000 });

    const rows = await flowRows(page);
    // Newest first: the live record, then the two kept.
    assert.deepEqual(
      rows.map((r) => [r[1], r[2], r[4], r[5]]),
      [
        ['shop/web-7:40000', 'shop/api-1:80 via shop/api:80', 'allow', ''],
        [`shop/<b>bold</b>:40000app=${XSS}`, 'shop/api-0:80', 'deny', 'security/deny-db ingress/0'],
        ['shop/web-1:40000', 'shop/api-0:80', 'allow', ''],
      ],
    );
    const injected = await page.evaluate(() => ({
      elements: document.querySelectorAll('main img, main b').length,
      title: document.title,
      denyClass: document.querySelector('#flows tbody tr:nth-child(2) td:nth-child(5)')?.className,
    }));
    assert.deepEqual(injected, { elements: 0, title: 'podroute w1', denyClass: 'verdict-deny' });
    await page.screenshot({ path: join(ARTIFACTS, 'flows.png'), fullPage: true });
    await page.close();
  });

  it('a filter reaches the provider, replaces the stream it had, and the table holds what matches', async () => {
    const page = await open(servers[0]!);
    await waitFor(() => flows.open, { what: 'the page following flows', until: (n) => n === 1, timeoutMs: 10_000 });
    const before = flows.aborted.length;
    await page.type('#flow-filters input[name=namespace]', 'shop');
    await page.select('#flow-filters select[name=verdict]', 'deny');
    await waitFor(() => flows.queries.some((q) => q.namespace === 'shop' && q.verdict === 'deny' && q.follow), {
      what: 'the filtered stream at the provider',
      timeoutMs: 5000,
    });
    await waitFor(() => flows.open, { what: 'one stream, the filtered one', until: (n) => n === 1, timeoutMs: 5000 });
    assert.ok(flows.aborted.length > before, 'the unfiltered stream was ended');
    await page.waitForFunction(() => document.querySelectorAll('#flows tbody tr').length === 1, { timeout: 5000 });
    flows.push(record(8, { verdict: 'deny' }));
    flows.push(record(9, { verdict: 'allow' }));
    await page.waitForFunction(() => document.querySelectorAll('#flows tbody tr').length === 2, { timeout: 2000 });
    assert.deepEqual(
      (await flowRows(page)).map((r) => [r[1], r[4]]),
      [
        ['shop/web-8:40000', 'deny'],
        [`shop/<b>bold</b>:40000app=${XSS}`, 'deny'],
      ],
    );
    assert.match(await page.$eval('#flows-status', (e) => e.textContent ?? ''), /following \(namespace shop, verdict deny\)/);
    await page.close();
    await waitFor(() => flows.open, { what: 'the closed page’s stream ended', until: (n) => n === 0, timeoutMs: 5000 });
  });

  it('without a provider the page says flow logs are off', async () => {
    const page = await open(servers[1]!);
    await page.waitForFunction(() => document.getElementById('flows-status')?.textContent === 'Flow logs are off on this node.', {
      timeout: 10_000,
    });
    assert.equal(await page.$eval('#flows', (e) => (e as HTMLElement).hidden), true);
    await page.close();
  });

  it('ran with no script error and no blocked load', () => {
    assert.deepEqual(problems, []);
  });
});
