// The agent's two endpoints: a Unix-socket control API (`podroute node status` reads it; a
// file path works from any network namespace) and an HTTP port for Prometheus and health
// probes (/metrics, /liveness, /readiness, as calico/node's 9099). Both are local: the socket
// is its owner's and group's only, the port listens on 127.0.0.1 unless told otherwise (as
// Felix's healthHost), and neither holds a request that is large or slow.
import http from 'node:http';
import { claimSocketPath, listenControlSocket } from '../bgpd/control-socket.js';
import type { NodeAgent } from './agent.js';
import { bgpRouteRows, routesDocument } from './route-rows.js';
import { parseFlowFilter } from './flow-records.js';

function reply(res: http.ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  res.writeHead(status, { 'content-type': type });
  res.end(type === 'application/json' ? JSON.stringify(body) : String(body));
}

/** Where the health port listens unless told: this host only. */
export const DEFAULT_HEALTH_HOST = '127.0.0.1';
/** Owner and group: whoever can connect can stop the agent. */
export const CONTROL_SOCKET_MODE = 0o660;
/** No call takes a body; one over this is refused rather than read. */
export const MAX_REQUEST_BODY = 1024 * 1024;

function tooLarge(res: http.ServerResponse): void {
  res.writeHead(413, { 'content-type': 'application/json', connection: 'close' });
  res.end(JSON.stringify({ error: `the request body is over the limit of ${MAX_REQUEST_BODY} bytes (1 MiB)` }));
}

/**
 * A server that cuts off a client slow to send its headers (5 s) or its request (10 s), checked
 * every second, and answers 413 to a body over the limit without reading it.
 */
export function limitedServer(handler: http.RequestListener): http.Server {
  const server = http.createServer({ connectionsCheckingInterval: 1_000, maxHeaderSize: 16 * 1024 }, (req, res) => {
    if (Number(req.headers['content-length'] ?? 0) > MAX_REQUEST_BODY) return tooLarge(res);
    // A chunked body declares no length: count it as it comes, and cut it off past the limit.
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_REQUEST_BODY) req.socket.destroy();
    });
    handler(req, res);
  });
  // A client that asks before sending a large body (curl does past 1 MiB) is told 413 instead of
  // "100 Continue": answering 413 after inviting the body races the client's upload, and a close
  // with its bytes unread resets the connection before the client reads the 413.
  server.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (Number(req.headers['content-length'] ?? 0) > MAX_REQUEST_BODY) return tooLarge(res);
    res.writeContinue();
    server.emit('request', req, res);
  });
  server.headersTimeout = 5_000;
  server.requestTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  server.maxConnections = 64;
  return server;
}

export async function serveAgentControl(agent: NodeAgent, socketPath: string, onStop: () => void): Promise<http.Server> {
  // Its folder made or checked (no other user may rename the socket); a socket another agent
  // answers on is its own; one a killed agent left behind is replaced.
  await claimSocketPath(socketPath, 'control');
  const server = limitedServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://agent');
    try {
      switch (`${req.method} ${url.pathname}`) {
        case 'GET /status':
          return reply(res, 200, agent.status());
        case 'GET /routes':
          return reply(res, 200, routesDocument(agent.learnedRoutes(), agent.felix));
        case 'GET /bgp/routes':
          return reply(res, 200, bgpRouteRows(agent.speaker));
        case 'GET /metrics':
          return reply(res, 200, agent.metrics.render(), 'text/plain; version=0.0.4');
        case 'GET /policy/counters':
          agent.policyCounters().then(
            (c) => reply(res, 200, { counters: Object.fromEntries(c), refused: Object.fromEntries(agent.policyRefused()) }),
            (e: Error) => reply(res, 500, { error: e.message }),
          );
          return;
        case 'GET /flows': {
          if (!agent.flows) return reply(res, 404, { error: 'flow logs are off on this node (FelixConfiguration flowLogsFileEnabled)' });
          let filter: ReturnType<typeof parseFlowFilter>;
          try {
            filter = parseFlowFilter(url.searchParams);
          } catch (e) {
            return reply(res, 400, { error: (e as Error).message });
          }
          if (url.searchParams.get('follow') === '1') return agent.flows.follow(res, filter);
          return reply(res, 200, agent.flows.records(filter));
        }
        case 'GET /flows/status':
          return reply(res, 200, agent.flows?.status() ?? { enabled: false });
        case 'GET /policy/table':
          agent.policyDump(url.searchParams.get('kernel') === '1').then(
            (d) => (d ? reply(res, 200, d) : reply(res, 404, { error: 'policy is off on this node: felix keeps no table' })),
            (e: Error) => reply(res, 500, { error: e.message }),
          );
          return;
        case 'POST /stop':
          reply(res, 200, { stopping: true });
          return onStop();
        default:
          return reply(res, 404, { error: `no such call: ${req.method} ${url.pathname}` });
      }
    } catch (e) {
      reply(res, 500, { error: (e as Error).message });
    }
  });
  // Never open to others, even briefly; a bind that fails fails the start.
  await listenControlSocket(server, { path: socketPath, mode: CONTROL_SOCKET_MODE }).catch((e: Error) => {
    throw new Error(`control: ${socketPath}: ${e.message}`);
  });
  return server;
}

export function serveHealth(agent: NodeAgent, port: number, host = DEFAULT_HEALTH_HOST): Promise<http.Server> {
  const server = limitedServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://agent').pathname;
    if (path === '/metrics') return reply(res, 200, agent.metrics.render(), 'text/plain; version=0.0.4');
    if (path === '/liveness') return reply(res, 200, { live: true });
    if (path === '/readiness' || path === '/health') {
      const s = agent.status();
      const established = s.peers.filter((p) => p.state === 'Established').length;
      const ok = s.ready;
      return reply(res, ok ? 200 : 503, { ready: ok, peers: s.peers.length, established, routesFailing: s.routes.failures });
    }
    reply(res, 404, { error: `no such path ${path}: /metrics, /liveness, /readiness` });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
