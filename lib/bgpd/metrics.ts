// bgpd's and the reflector's Prometheus metrics on GET /metrics: each peer's session state,
// prefixes accepted and advertised, messages in and out, and the process's own. Read from the
// speaker at scrape time: nothing is counted twice and a scrape costs nothing between scrapes.
import http from 'node:http';
import type { BgpSpeaker } from '../../bgp/index.js';
import { LIMITED_SERVER_OPTIONS, limitRequests } from './control-socket.js';

const STATES = ['Idle', 'Connect', 'Active', 'OpenSent', 'OpenConfirm', 'Established'];
const started = Date.now() / 1000;

const quote = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"');

type Sample = { labels: Record<string, string>; value: number };

function family(name: string, help: string, type: 'gauge' | 'counter', samples: Sample[]): string {
  const lines = samples.map((s) => {
    const l = Object.entries(s.labels).map(([k, v]) => `${k}="${quote(v)}"`);
    return `${name}${l.length ? `{${l.join(',')}}` : ''} ${s.value}\n`;
  });
  return `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${lines.join('')}`;
}

/** The exposition text of the speaker and the process, as of now. */
export function speakerMetrics(speaker: BgpSpeaker): () => string {
  return () => {
    const ps = speaker.peerStatus();
    const per = (value: (p: (typeof ps)[number]) => number) => ps.map((p) => ({ labels: { peer: p.address }, value: value(p) }));
    const rib = speaker.rib.stats().prefixes;
    const cpu = process.cpuUsage();
    return [
      family(
        'podroute_bgp_peer_state',
        'Each peer by session state: 1 for the state it is in',
        'gauge',
        ps.flatMap((p) => STATES.map((state) => ({ labels: { peer: p.address, state }, value: p.state === state ? 1 : 0 }))),
      ),
      family(
        'podroute_bgp_peer_up',
        '1 when the session is Established',
        'gauge',
        ps.map((p) => ({ labels: { peer: p.address, asn: String(p.asn) }, value: p.state === 'Established' ? 1 : 0 })),
      ),
      family(
        'podroute_bgp_peer_prefixes_accepted',
        'Paths from the peer kept in the Adj-RIB-In (after import policy)',
        'gauge',
        per((p) => p.prefixesReceived),
      ),
      family(
        'podroute_bgp_peer_prefixes_advertised',
        'Prefixes the peer has from us',
        'gauge',
        per((p) => p.prefixesSent),
      ),
      family(
        'podroute_bgp_peer_messages_received_total',
        'BGP messages received from the peer',
        'counter',
        per((p) => p.messagesIn),
      ),
      family(
        'podroute_bgp_peer_messages_sent_total',
        'BGP messages sent to the peer',
        'counter',
        per((p) => p.messagesOut),
      ),
      family('podroute_bgp_rib_prefixes', 'Prefixes in the Loc-RIB by family', 'gauge', [
        { labels: { family: 'ipv4-unicast' }, value: rib['ipv4-unicast'] },
        { labels: { family: 'ipv6-unicast' }, value: rib['ipv6-unicast'] },
      ]),
      family('process_cpu_seconds_total', 'User and system CPU time spent in seconds', 'counter', [
        { labels: {}, value: (cpu.user + cpu.system) / 1e6 },
      ]),
      family('process_resident_memory_bytes', 'Resident memory size in bytes', 'gauge', [{ labels: {}, value: process.memoryUsage.rss() }]),
      family('process_start_time_seconds', 'Start time of the process since the epoch in seconds', 'gauge', [
        { labels: {}, value: started },
      ]),
      family('nodejs_heap_used_bytes', 'V8 heap in use in bytes', 'gauge', [{ labels: {}, value: process.memoryUsage().heapUsed }]),
    ].join('');
  };
}

/** Serves GET /metrics on host:port (127.0.0.1 unless told: it is for this host's scraper). */
export function serveMetrics(render: () => string, port: number, host = '127.0.0.1'): Promise<http.Server> {
  // A scrape has no body: the control socket's time and connection limits are all it needs.
  const server = http.createServer(LIMITED_SERVER_OPTIONS, (req, res) => {
    const path = new URL(req.url ?? '/', 'http://bgpd').pathname;
    if (req.method === 'GET' && path === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      res.end(render());
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('only GET /metrics here\n');
  });
  limitRequests(server);
  return new Promise((resolve, reject) => {
    server.once('error', (e) => reject(new Error(`metrics port ${host}:${port}: ${e.message}`)));
    server.listen(port, host, () => resolve(server));
  });
}
