// The agent's web page: the node's sessions and routes, the cluster as a picture, and live
// flows, served read-only on 127.0.0.1 unless told otherwise. GET only (anything else 405), a
// Content-Security-Policy that lets the page load nothing but its own files, and a Host check
// so that a web site cannot read it through a name of its own resolving to this address.
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import type http from 'node:http';
import type { NodeAgent } from '../agent.js';
import { routesDocument } from '../route-rows.js';
import { DEFAULT_HEALTH_HOST, limitedServer } from '../server.js';
import { FAVICON_SVG, INDEX_HTML, pageScripts, STYLE_CSS } from './assets.js';
import { clusterPicture } from './cluster-picture.js';
import { type FlowProvider, FlowQueryError, type FlowRecord, parseFlowQuery } from './flows.js';
import { nodeView, routesView } from './views.js';

/** Where the web page listens unless told: this host only (reach it from elsewhere through ssh -L). */
export const DEFAULT_WEB_HOST = DEFAULT_HEALTH_HOST;

export interface WebOptions {
  port: number;
  host?: string;
  /** The node's flow records; absent: the page says flow logs are off. */
  flows?: FlowProvider;
}

/** Records one `/api/flows` answer holds at most (the newest). */
export const MAX_FLOWS_LISTED = 1000;
/** Follow streams open at once; more get 429. */
export const MAX_FOLLOWERS = 8;
/** A follower this far behind loses records instead of the agent buffering them. */
const FOLLOW_BUFFER = 1024 * 1024;

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-resource-policy': 'same-origin',
  'cache-control': 'no-store',
};

function send(res: http.ServerResponse, status: number, type: string, body: string, extra: Record<string, string> = {}): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, ...extra });
  res.end(body);
}

function json(res: http.ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
  send(res, status, 'application/json', JSON.stringify(body), extra);
}

/**
 * A Host header the page answers to: an address, `localhost`, or this machine's name. Another
 * name resolving here is a web site trying to read the page from the user's browser.
 */
export function hostAllowed(header: string | undefined, machine = hostname()): boolean {
  if (!header) return false;
  const name = header.startsWith('[') ? header.slice(1, header.indexOf(']')) : header.replace(/:\d+$/, '');
  if (isIP(name)) return true;
  const lower = name.toLowerCase().replace(/\.$/, '');
  return lower === 'localhost' || lower === machine.toLowerCase();
}

export async function serveWeb(agent: NodeAgent, options: WebOptions): Promise<http.Server> {
  const scripts = await pageScripts();
  let followers = 0;
  const server = limitedServer((req, res) => {
    if (!hostAllowed(req.headers.host)) return json(res, 421, { error: `this page answers to an address, localhost or ${hostname()}` });
    if (req.method !== 'GET')
      return json(res, 405, { error: `${req.method} is refused: this page is read-only (GET only)` }, { allow: 'GET' });
    const url = new URL(req.url ?? '/', 'http://agent');
    const path = url.pathname;
    try {
      if (path === '/' || path === '/index.html') return send(res, 200, 'text/html; charset=utf-8', INDEX_HTML);
      if (path === '/style.css') return send(res, 200, 'text/css; charset=utf-8', STYLE_CSS);
      if (path === '/favicon.svg') return send(res, 200, 'image/svg+xml', FAVICON_SVG);
      const script = scripts.get(path);
      if (script !== undefined) return send(res, 200, 'text/javascript; charset=utf-8', script);
      switch (path) {
        case '/api/node':
          return json(res, 200, nodeView(agent.status(), Date.now(), options.flows !== undefined));
        case '/api/routes':
          return json(res, 200, routesView(agent.speaker?.routes() ?? [], routesDocument(agent.learnedRoutes(), agent.felix)));
        case '/api/cluster': {
          const c = agent.clusterResources();
          return json(res, 200, clusterPicture({ self: agent.nodeName, ...c, sessions: agent.status().peers }));
        }
        case '/api/flows':
          return flows(res, url.searchParams);
        default:
          return json(res, 404, { error: `no such page: ${path}` });
      }
    } catch (e) {
      json(res, 500, { error: (e as Error).message });
    }
  });

  function flows(res: http.ServerResponse, params: URLSearchParams): void {
    const provider = options.flows;
    if (!provider) return json(res, 404, { error: 'flow logs are off on this node' });
    let query: ReturnType<typeof parseFlowQuery>;
    try {
      query = parseFlowQuery(params);
    } catch (e) {
      if (e instanceof FlowQueryError) return json(res, 400, { error: e.message });
      throw e;
    }
    const stop = new AbortController();
    res.on('close', () => stop.abort());
    if (!query.follow) {
      void listFlows(provider(query, stop.signal)).then(
        (flows) => json(res, 200, { flows }),
        (e: Error) => json(res, 500, { error: e.message }),
      );
      return;
    }
    if (followers >= MAX_FOLLOWERS) return json(res, 429, { error: `${MAX_FOLLOWERS} flow streams are open already` });
    followers++;
    res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'application/x-ndjson' });
    res.flushHeaders();
    void (async () => {
      try {
        for await (const r of provider(query, stop.signal)) {
          if (stop.signal.aborted) break;
          if (res.writableLength > FOLLOW_BUFFER) continue; // a reader this slow loses records, the agent keeps its memory
          res.write(`${JSON.stringify(r)}\n`);
        }
      } catch {
        // The provider failed or the reader left: the stream ends, and the page follows again.
      } finally {
        followers--;
        res.end();
      }
    })();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? DEFAULT_WEB_HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

/** The last MAX_FLOWS_LISTED of a provider's records (the newest, as it gives them oldest first). */
async function listFlows(records: AsyncIterable<FlowRecord>): Promise<FlowRecord[]> {
  const out: FlowRecord[] = [];
  for await (const r of records) {
    out.push(r);
    if (out.length > MAX_FLOWS_LISTED * 2) out.splice(0, out.length - MAX_FLOWS_LISTED);
  }
  return out.slice(-MAX_FLOWS_LISTED);
}
