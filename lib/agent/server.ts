// The agent's two endpoints: a Unix-socket control API (`podroute node status` reads it; a
// file path works from any network namespace) and an HTTP port for Prometheus and health
// probes (/metrics, /liveness, /readiness, as calico/node's 9099).
import { existsSync, mkdirSync, unlinkSync } from 'node:fs';
import http from 'node:http';
import { dirname } from 'node:path';
import { describeRoute } from '../../felix/index.js';
import type { NodeAgent } from './agent.js';

function reply(res: http.ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  res.writeHead(status, { 'content-type': type });
  res.end(type === 'application/json' ? JSON.stringify(body) : String(body));
}

export function serveAgentControl(agent: NodeAgent, socketPath: string, onStop: () => void): http.Server {
  mkdirSync(dirname(socketPath), { recursive: true });
  if (existsSync(socketPath)) unlinkSync(socketPath);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://agent');
    try {
      switch (`${req.method} ${url.pathname}`) {
        case 'GET /status':
          return reply(res, 200, agent.status());
        case 'GET /routes':
          return reply(res, 200, {
            learned: agent.learnedRoutes(),
            programmed: agent.felix.desired.routes.map((r) => describeRoute(r)),
            failures: [...agent.felix.failures.values()],
          });
        case 'GET /bgp/routes':
          return reply(
            res,
            200,
            (agent.speaker?.routes() ?? []).map((r) => ({
              prefix: r.prefix,
              nextHop: r.nextHop,
              from: r.peer && r.peer.type !== 'local' ? r.peer.address : 'local',
              asPath: r.attributes.asPath,
              stale: r.stale,
            })),
          );
        case 'GET /metrics':
          return reply(res, 200, agent.metrics.render(), 'text/plain; version=0.0.4');
        case 'GET /policy/counters':
          agent.policyCounters().then(
            (c) => reply(res, 200, { counters: Object.fromEntries(c), refused: Object.fromEntries(agent.policyRefused()) }),
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
  server.listen(socketPath);
  return server;
}

export function serveHealth(agent: NodeAgent, port: number, host?: string): Promise<http.Server> {
  const server = http.createServer((req, res) => {
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
