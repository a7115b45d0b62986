// The agent's web page in a real lab, read by a real browser: two `podroute node run` agents in
// namespaces on one segment (n2 a route reflector), a BGPPeer to a ToR that never answers, and
// Debian's headless Chromium in n1's namespace. n1's page (on its 127.0.0.1, the default) shows
// its session with n2 Established and the ToR's not, n2's block learned and programmed, and the
// cluster as a picture; n2's page (--web-host on its node address) shows the same session from
// its side. A Node label written as markup stays text, no password reaches the browser, and
// the page refuses POST. Screenshots: test-artifacts/web-page/n1.png and n2.png.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { callControl } from '../../../lib/bgpd/control.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { API_VERSION, type Node } from '../../../lib/resources/index.js';
import { openBrowser, openPage, type HeadlessBrowser } from '../../support/browser.js';
import { AgentCluster, agentStatus, ipPool, ROOT } from '../../support/node-agents.js';
import { waitFor } from '../../support/wait.js';

const ARTIFACTS = join(ROOT, 'test-artifacts/web-page');
const XSS = `<img src=x onerror="document.title='pwned'">`;
const PASSWORD = 'web-page-tor-password-7c1';
const N1 = '10.94.0.1';
const N2 = '10.94.0.2';
const TOR = '10.94.0.250';

/** A table's body rows, each as its cells' text. */
function rows(page: Page, table: string): Promise<string[][]> {
  return page.$$eval(`#${table} tbody tr`, (trs) => trs.map((r) => [...r.cells].map((c) => c.textContent ?? '')));
}

describe('the agent web page in a lab, in a real browser', function () {
  this.timeout(120_000);
  const cluster = new AgentCluster('wp');
  let browser: HeadlessBrowser | undefined;
  let block = '';
  const problems: string[] = [];

  before(async function () {
    if (process.getuid?.() !== 0) this.skip(); // namespaces
    mkdirSync(ARTIFACTS, { recursive: true });
    await cluster.open();
    const { ds, lab } = cluster;
    await ds.create(ipPool('pods', '10.95.0.0/16'));
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'BGPPeer',
      metadata: { name: 'tor-1' },
      spec: { peerIP: TOR, asNumber: 65010, node: 'n1', password: PASSWORD },
    });
    const segment = await lab.segment();
    const [ns1, ns2] = [await lab.namespace('n1'), await lab.namespace('n2')];
    await segment.attach(ns1, { ifname: 'eth0', v4: `${N1}/24` });
    await segment.attach(ns2, { ifname: 'eth0', v4: `${N2}/24` });
    const opened = openBrowser({ dir: lab.dir, netns: ns1 });
    await Promise.all([
      cluster.startAgent(ns1, { name: 'n1', ip: `${N1}/24`, flags: ['--web-port', '8080'] }),
      cluster.startAgent(ns2, { name: 'n2', ip: `${N2}/24`, flags: ['--web-port', '8080', '--web-host', N2, '--cluster-id', '244.0.0.1'] }),
    ]).finally(async () => {
      browser = await opened;
    });
    // A block of n2's for n1 to learn, and a label on n1 that is markup.
    await new Ipam(ds).autoAssign({ handle: 'web-page-n2', node: 'n2', attrs: {} });
    block = (await new Ipam(ds).blocksForNode('n2'))[0]!.cidr;
    const n1 = (await ds.get('Node', 'n1')) as Node;
    await ds.update({ ...n1, metadata: { ...n1.metadata, labels: { ...n1.metadata.labels, note: XSS } } });
    await waitFor(
      async () => {
        const s = await agentStatus(cluster.agent('n1'));
        const learned = await callControl<{ learned: { prefix: string }[] }>(cluster.agent('n1').control, 'GET', '/routes');
        return { up: s.peers.find((p) => p.address === N2)?.state, learned: learned.learned.map((r) => r.prefix) };
      },
      {
        what: `n1 Established with n2 and holding ${block}`,
        until: (x) => x.up === 'Established' && x.learned.includes(block),
        timeoutMs: 30_000,
      },
    );
  });
  after(async () => {
    await browser?.close();
    await cluster.close();
  });

  // The 405s are the test's own POST, PUT and DELETE.
  const open = (url: string): Promise<Page> => openPage(browser!, url, { problems, expectedConsole: /status of 405/ });

  it('n1’s page: the session with n2 Established, the ToR’s not, n2’s block learned and programmed', async () => {
    const page = await open('http://127.0.0.1:8080/');
    await page.waitForFunction(
      (n2, b) =>
        [...document.querySelectorAll('#sessions tbody tr')].some(
          (r) => r.textContent?.includes(n2) && r.textContent.includes('Established'),
        ) &&
        [...document.querySelectorAll('#bgp-routes tbody td')].some((c) => c.textContent === b) &&
        document.querySelector('#cluster svg g[data-id="n2"]') !== null,
      { timeout: 15_000 },
      N2,
      block,
    );
    const sessions = await rows(page, 'sessions');
    const n2 = sessions.find((r) => r[0] === N2)!;
    const tor = sessions.find((r) => r[0] === TOR)!;
    assert.deepEqual([n2[1], n2[2], n2[3], n2[4]], ['64512', 'route reflector', 'Node/n2', 'Established']);
    assert.match(n2[5]!, /^\d+(s|m \d+s)$/, `an uptime: ${n2[5]}`);
    assert.equal(n2[6], '1', 'one prefix received from n2');
    assert.deepEqual([tor[1], tor[3]], ['65010', 'BGPPeer/tor-1']);
    assert.notEqual(tor[4], 'Established');
    const classes = await page.$$eval('#sessions tbody tr td:nth-child(5)', (tds) => tds.map((td) => `${td.textContent} ${td.className}`));
    assert.ok(classes.includes('Established state-established'), `the Established cell's colour: ${classes}`);

    assert.deepEqual(
      (await rows(page, 'bgp-routes')).find((r) => r[0] === block),
      [block, N2, N2, '', ''],
    );
    const programmed = await page.$$eval('#programmed li', (lis) => lis.map((li) => li.textContent));
    assert.ok(programmed.includes(`${block} via ${N2} dev eth0`), `programmed: ${programmed}`);
    await page.screenshot({ path: join(ARTIFACTS, 'n1.png'), fullPage: true });
    await page.close();
  });

  it('n1’s page draws the cluster: n1, the reflector n2, the ToR, sessions coloured by state', async () => {
    const page = await open('http://127.0.0.1:8080/');
    await page.waitForSelector('#cluster svg g[data-id="BGPPeer/tor-1"]', { timeout: 15_000 });
    const picture = await page.evaluate(() => ({
      boxes: [...document.querySelectorAll('#cluster svg g[data-id]')].map(
        (g) => `${g.getAttribute('data-id')} ${g.querySelector('rect')?.getAttribute('class')}`,
      ),
      lines: [...document.querySelectorAll('#cluster svg path.session')].map(
        (l) => `${l.getAttribute('class')?.replace('session ', '')} ${l.querySelector('title')?.textContent}`,
      ),
    }));
    assert.deepEqual(picture.boxes.sort(), ['BGPPeer/tor-1 box tor', 'n1 box node self', 'n2 box reflector']);
    assert.equal(picture.lines.length, 2, `one line per session: ${picture.lines}`);
    assert.ok(
      picture.lines.some((l) => l.startsWith('state-established n1 – n2')),
      `n1–n2 Established: ${picture.lines}`,
    );
    assert.ok(
      picture.lines.some((l) => /^state-(opening|down) n1 – BGPPeer\/tor-1/.test(l)),
      `n1–ToR not Established: ${picture.lines}`,
    );
    await page.close();
  });

  it('a label written as markup shows as text and makes nothing; no password reaches the page; POST is refused', async () => {
    const page = await open('http://127.0.0.1:8080/');
    await page.waitForFunction(
      (xss) => [...document.querySelectorAll('#nodes .label')].some((l) => l.textContent === `note=${xss}`),
      { timeout: 15_000 },
      XSS,
    );
    const seen = await page.evaluate(async () => {
      const docs = await Promise.all(['/api/node', '/api/routes', '/api/cluster', '/'].map(async (p) => (await fetch(p)).text()));
      const refused = await Promise.all(
        ['POST', 'PUT', 'DELETE'].map(async (method) => {
          const r = await fetch('/api/node', { method, body: method === 'DELETE' ? undefined : '{}' });
          return `${method} ${r.status}`;
        }),
      );
      return {
        images: document.querySelectorAll('img').length,
        title: document.title,
        svgTitle: [...document.querySelectorAll('#cluster svg g[data-id="n1"] title')].map((t) => t.textContent).join(''),
        text: `${document.documentElement.outerHTML}\n${docs.join('\n')}`,
        refused,
      };
    });
    assert.equal(seen.images, 0, 'the label made an element');
    assert.equal(seen.title, 'podroute n1');
    assert.ok(seen.svgTitle.includes(`note=${XSS}`), `the picture's tooltip has the label as text: ${seen.svgTitle}`);
    assert.ok(!seen.text.includes(PASSWORD), 'the BGPPeer password reached the browser');
    assert.deepEqual(seen.refused, ['POST 405', 'PUT 405', 'DELETE 405']);
    assert.equal((await agentStatus(cluster.agent('n1'))).ready, true, 'the agent runs on');
    await page.close();
  });

  it('n2’s page on its node address (--web-host) shows the session from its side; n1’s is not on its node address', async () => {
    const page = await open(`http://${N2}:8080/`);
    await page.waitForFunction(
      (n1) =>
        [...document.querySelectorAll('#sessions tbody tr')].some(
          (r) => r.textContent?.includes(n1) && r.textContent.includes('Established'),
        ),
      { timeout: 15_000 },
      N1,
    );
    const n1 = (await rows(page, 'sessions')).find((r) => r[0] === N1)!;
    assert.deepEqual([n1[2], n1[4]], ['rr client', 'Established']);
    assert.match(await page.$eval('#node-facts', (e) => e.textContent ?? ''), /route reflector, cluster ID 244\.0\.0\.1/);
    await page.screenshot({ path: join(ARTIFACTS, 'n2.png'), fullPage: true });
    await assert.rejects(page.goto(`http://${N1}:8080/`), /ERR_CONNECTION_REFUSED/);
    await page.close();
  });

  it('ran with no script error and no blocked load', () => {
    assert.deepEqual(problems, []);
  });
});
