// The process a policy test runs inside each pod's network namespace (`ip netns exec`): it
// serves the matrix ports (answering every TCP connection and UDP datagram with its name and
// the address it saw, so a NAT shows) and, on request over a Unix socket (the filesystem is
// shared across network namespaces, and no policy filters it), probes other pods from inside
// the pod, all at once, each with a bounded timeout and one retry.
//   node --import tsx probe-agent.ts --name x/a --control /tmp/x-a.sock --tcp 80,81 --udp 80
import { createSocket } from 'node:dgram';
import { rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { connect, createServer } from 'node:net';
import { networkInterfaces } from 'node:os';

export interface ProbeRequest {
  readonly id: string;
  readonly protocol: 'TCP' | 'UDP';
  readonly host: string;
  readonly port: number;
}

export interface ProbeResult {
  readonly id: string;
  readonly ok: boolean;
  /** What the far side answered: "<its name> <the source address it saw>". */
  readonly reply?: string;
  /** Why not: "timeout", "ECONNREFUSED", … */
  readonly error?: string;
  readonly attempts: number;
  readonly ms: number;
}

export interface ProbeBatch {
  readonly probes: readonly ProbeRequest[];
  readonly timeoutMs: number;
  /** 2 = retry a failed probe once (a lost SYN must not read as a policy). */
  readonly attempts: number;
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function tcpOnce(p: ProbeRequest, timeoutMs: number): Promise<{ reply?: string; error?: string }> {
  return new Promise((resolve) => {
    let data = '';
    const s = connect({ host: p.host, port: p.port });
    const done = (r: { reply?: string; error?: string }) => {
      clearTimeout(timer);
      s.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => done({ error: 'timeout' }), timeoutMs);
    s.setEncoding('utf8');
    s.on('data', (d: string) => {
      data += d;
      if (data.includes('\n')) done({ reply: data.trim() });
    });
    s.on('end', () => done(data ? { reply: data.trim() } : { error: 'closed without a reply' }));
    s.on('error', (e: NodeJS.ErrnoException) => done({ error: e.code ?? e.message }));
  });
}

// UDP source ports are handed out in turn from a range, not left to the kernel's random pick:
// a port reused within conntrack's UDP timeout would ride an earlier flow's entry, and a probe
// that an old allowed flow carries through proves nothing about the policy in force now.
const UDP_PORTS = { first: 20_000, count: 40_000 };
let nextUdpPort = UDP_PORTS.first + Math.floor(Math.random() * UDP_PORTS.count);
function takeUdpPort(): number {
  const port = nextUdpPort;
  nextUdpPort = UDP_PORTS.first + ((nextUdpPort - UDP_PORTS.first + 1) % UDP_PORTS.count);
  return port;
}

function udpOnce(p: ProbeRequest, timeoutMs: number, tries = 3): Promise<{ reply?: string; error?: string }> {
  return new Promise((resolve) => {
    const s = createSocket(p.host.includes(':') ? 'udp6' : 'udp4');
    let settled = false;
    const done = (r: { reply?: string; error?: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      s.close();
      resolve(r);
    };
    const timer = setTimeout(() => done({ error: 'timeout' }), timeoutMs);
    s.on('message', (m) => done({ reply: m.toString('utf8').trim() }));
    s.on('error', (e: NodeJS.ErrnoException) => {
      // Our port is in use (a listener, or a probe still open): take the next one.
      if (e.code === 'EADDRINUSE' && tries > 1 && !settled) {
        settled = true;
        clearTimeout(timer);
        s.close();
        resolve(udpOnce(p, timeoutMs, tries - 1));
      } else done({ error: e.code ?? e.message });
    });
    s.bind(takeUdpPort(), () => s.send('probe\n', p.port, p.host));
  });
}

async function probe(p: ProbeRequest, timeoutMs: number, attempts: number): Promise<ProbeResult> {
  const t0 = Date.now();
  let last: { reply?: string; error?: string } = {};
  for (let i = 1; i <= attempts; i++) {
    last = await (p.protocol === 'TCP' ? tcpOnce(p, timeoutMs) : udpOnce(p, timeoutMs));
    if (last.reply !== undefined) return { id: p.id, ok: true, reply: last.reply, attempts: i, ms: Date.now() - t0 };
  }
  return { id: p.id, ok: false, error: last.error, attempts, ms: Date.now() - t0 };
}

async function main(): Promise<void> {
  const name = arg('--name') ?? 'pod';
  const control = arg('--control');
  if (!control) throw new Error('--control <unix socket path> is required');
  const tcp = (arg('--tcp') ?? '').split(',').filter(Boolean).map(Number);
  const udp = (arg('--udp') ?? '').split(',').filter(Boolean).map(Number);
  const listening: Promise<void>[] = [];
  for (const port of tcp) {
    const server = createServer((s) => {
      s.on('error', () => undefined);
      s.end(`${name} ${s.remoteAddress?.replace(/^::ffff:/, '')}\n`);
    });
    listening.push(new Promise((ok, fail) => server.once('error', fail).listen(port, '0.0.0.0', () => ok())));
  }
  // One UDP socket per local address, not one on 0.0.0.0: a reply must leave from the address
  // the request was sent to, or a namespace with several (the "internet" one) answers from
  // another, which the client's conntrack (and NAT) cannot match to its request.
  const addresses = Object.values(networkInterfaces())
    .flat()
    .filter((a) => a?.family === 'IPv4')
    .map((a) => a!.address);
  for (const port of udp)
    for (const address of addresses) {
      const sock = createSocket('udp4');
      sock.on('message', (_m, rinfo) => sock.send(`${name} ${rinfo.address}\n`, rinfo.port, rinfo.address));
      listening.push(new Promise((ok, fail) => sock.once('error', fail).bind(port, address, () => ok())));
    }
  await Promise.all(listening);
  rmSync(control, { force: true });
  const api = createHttpServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', async () => {
      try {
        const batch = JSON.parse(body) as ProbeBatch;
        const results = await Promise.all(batch.probes.map((p) => probe(p, batch.timeoutMs, batch.attempts)));
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(results));
      } catch (e) {
        res.writeHead(400).end(String(e));
      }
    });
  });
  await new Promise<void>((ok) => api.listen(control, () => ok()));
  process.stdout.write(`ready ${name}\n`);
  const stop = () => {
    rmSync(control, { force: true });
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e: unknown) => {
  process.stderr.write(`probe-agent: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
