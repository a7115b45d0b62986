// Debian's headless Chromium, driven by puppeteer-core over the DevTools pipe (fds 3 and 4): no
// browser download, no debugging port, and it can run inside a lab's namespace, where the page
// of an agent listening on that namespace's 127.0.0.1 is. Started in a process group of its own
// with a fresh profile; close() kills that group by its PID and removes the profile. openPage()
// opens one of the agent's pages the way every page test does: its errors kept, its headers checked.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import assert from 'node:assert/strict';
import puppeteer, { type Browser, type ConnectionTransport, type Page } from 'puppeteer-core';
import type { Netns } from './netns.js';

export const CHROMIUM = '/usr/bin/chromium';

/** Nothing fetched from anywhere but the pages the test opens. */
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface HeadlessBrowser {
  browser: Browser;
  /** The browser process's PID, also its process group's. */
  pid: number;
  /** Kills the browser's process group and removes its profile; safe to call twice. */
  close(): Promise<void>;
}

/** CDP messages over Chromium's pipe: JSON, each ended by a NUL byte. */
function pipeTransport(write: Writable, read: Readable): ConnectionTransport {
  let pending: Buffer[] = [];
  const transport: ConnectionTransport = {
    send: (message) => {
      write.write(message);
      write.write('\0');
    },
    close: () => {
      read.removeAllListeners('data');
    },
  };
  read.on('data', (chunk: Buffer) => {
    let start = 0;
    let end = chunk.indexOf(0);
    while (end >= 0) {
      const message = Buffer.concat([...pending, chunk.subarray(start, end)]).toString('utf8');
      pending = [];
      // Delivered in order, after the current tick, as puppeteer's own transport does.
      setImmediate(() => transport.onmessage?.(message));
      start = end + 1;
      end = chunk.indexOf(0, start);
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  });
  read.on('close', () => transport.onclose?.());
  write.on('error', () => undefined);
  read.on('error', () => undefined);
  return transport;
}

/**
 * Starts Chromium (in `netns` when given: a Netns or a namespace's kernel name) and connects to it. Its stderr goes to
 * `<dir>/chromium.log`. Throws naming the package when Chromium is not installed.
 */
export async function openBrowser(options: { dir: string; netns?: Netns | string }): Promise<HeadlessBrowser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (test/ensure-deps.sh does)`);
  const profile = mkdtempSync(join(tmpdir(), 'podroute-chromium-'));
  const argv = [CHROMIUM, ...FLAGS, `--user-data-dir=${profile}`, '--remote-debugging-pipe', 'about:blank'];
  // A namespace this suite's Lab made, or one a `podroute lab` made, by its kernel name.
  const ns = options.netns;
  const full = typeof ns === 'string' ? ['ip', 'netns', 'exec', ns, ...argv] : ns ? ns.wrap(argv) : argv;
  const child: ChildProcess = spawn(full[0]!, full.slice(1), {
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${full.join(' ')}`);
  const log = createWriteStream(join(options.dir, `chromium-${pid}.log`));
  child.stderr!.pipe(log);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* the group is gone already */
      }
      await exited;
      log.end();
      rmSync(profile, { recursive: true, force: true });
    })());
  try {
    const transport = pipeTransport(child.stdio[3] as Writable, child.stdio[4] as Readable);
    const browser = await puppeteer.connect({ transport, defaultViewport: { width: 1280, height: 1000 }, protocolTimeout: 30_000 });
    return { browser, pid, close };
  } catch (e) {
    await close();
    throw e;
  }
}

export interface PageOptions {
  /** Where the page's script errors and console errors go, each with the URL: the test asserts it stays empty. */
  problems: string[];
  /** Console errors the test causes itself (its own refused requests), not counted as problems. */
  expectedConsole?: RegExp;
}

/**
 * Opens `url` in a new tab: the page's uncaught errors and console errors go to `problems`, and
 * the answer must be a 200 with the agent's Content-Security-Policy (nothing but its own origin).
 */
export async function openPage(browser: HeadlessBrowser, url: string, options: PageOptions): Promise<Page> {
  const { problems, expectedConsole } = options;
  const page = await browser.browser.newPage();
  page.on('pageerror', (e) => problems.push(`${url}: page error: ${(e as Error).message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !expectedConsole?.test(m.text())) problems.push(`${url}: console: ${m.text()}`);
  });
  const res = await page.goto(url);
  assert.equal(res?.status(), 200, `${url} answered`);
  assert.match(res?.headers()['content-security-policy'] ?? '', /^default-src 'self'/, `${url}: the page's own origin only`);
  return page;
}
