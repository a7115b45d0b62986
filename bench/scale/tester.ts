// The tester process: a simulated cluster of lean BGP peers, one per loopback address, driven
// over Node IPC by a runner (reflector.ts, mesh.ts) that measures the real process meanwhile.
// Run apart from the runner so its CPU never counts as the daemon's and the runner's clock
// is not held up by the peers' parsing.
//
// Modes: `dial` (each peer connects from its address to the daemon, as reflector clients do)
// and `listen` (each peer listens on its address and the daemon dials it, as the mesh does).
import { connect, createServer, type Server } from 'node:net';
import { ipv4NumberAt } from '../../ip/index.js';
import { announceUpdates, withdrawUpdates, type V4Prefix } from '../speaker/wire.js';
import { LeanPeer } from './lean-peer.js';

export interface PeerSpec {
  address: string;
  /** Prefixes it announces once Established ("a.b.c.d/len"). */
  prefixes: string[];
}

export type TesterCommand =
  | {
      type: 'start';
      mode: 'dial' | 'listen';
      peers: PeerSpec[];
      /** Where to dial (dial mode). */
      target: { host: string; port: number };
      /** Where to listen on each peer's address (listen mode). */
      port: number;
      asn: number;
      holdTime: number;
      /** Every n-th peer keeps every prefix it holds (0: none). */
      sampleEvery: number;
      /** Routes each peer must hold for the cluster to count as converged (0: do not wait). */
      expected: number;
      /** Handshakes in flight at once when dialling. */
      concurrency: number;
    }
  | { type: 'drop'; indices: number[] }
  | { type: 'restore'; indices: number[] }
  | { type: 'announce'; index: number; prefixes: string[]; withdraw?: boolean }
  | { type: 'expect'; expected: number }
  | { type: 'stop' };

export interface TesterProgress {
  type: 'progress';
  at: number;
  established: number;
  /** Peers holding `expected` routes (sampled: exactly these; others: as many announcements). */
  complete: number;
  sampled: number;
  sampledComplete: number;
  drops: number;
  allEstablishedAt?: number;
  sampledConvergedAt?: number;
  convergedAt?: number;
  errors: Record<string, number>;
}

const now = () => performance.timeOrigin + performance.now();

function v4(text: string): V4Prefix {
  const slash = text.indexOf('/');
  return { addr: ipv4NumberAt(text, 0, slash), len: Number(text.slice(slash + 1)) };
}

function keyOf(text: string): number {
  const p = v4(text);
  return p.addr * 64 + p.len;
}

class Cluster {
  readonly peers: LeanPeer[] = [];
  private readonly servers = new Map<number, Server>();
  private readonly down = new Set<number>();
  private readonly queue: number[] = [];
  private inFlight = 0;
  private established = 0;
  private complete = new Set<LeanPeer>();
  private sampled = 0;
  private sampledComplete = 0;
  private expected: number;
  private allEstablishedAt: number | undefined;
  private sampledConvergedAt: number | undefined;
  private convergedAt: number | undefined;
  private readonly errors: Record<string, number> = {};
  private readonly index = new Map<LeanPeer, number>();

  constructor(private readonly cmd: Extract<TesterCommand, { type: 'start' }>) {
    this.expected = cmd.expected;
    const events = {
      established: (p: LeanPeer) => {
        this.established++;
        if (this.cmd.mode === 'dial') this.next(true);
        if (this.established === this.peers.length && this.allEstablishedAt === undefined) this.allEstablishedAt = now();
        this.check(p);
      },
      down: (p: LeanPeer, why: string, wasEstablished: boolean) => {
        if (wasEstablished) this.established--;
        this.errors[why] = (this.errors[why] ?? 0) + 1;
        this.uncomplete(p);
        if (this.cmd.mode === 'dial') {
          if (!wasEstablished) this.next(true);
          const i = this.index.get(p)!;
          if (!this.down.has(i)) setTimeout(() => this.enqueue(i), 1000);
        }
      },
      received: (p: LeanPeer) => this.check(p),
    };
    cmd.peers.forEach((spec, i) => {
      const sample = cmd.sampleEvery > 0 && i % cmd.sampleEvery === 0;
      if (sample) this.sampled++;
      const own = new Set(spec.prefixes.map(keyOf));
      const peer = new LeanPeer({ address: spec.address, asn: cmd.asn, holdTime: cmd.holdTime, own, sample }, events);
      peer.outbound = announceUpdates(spec.prefixes.map(v4), { origin: 'igp', asPath: [], nextHop: spec.address, localPref: 100 });
      this.peers.push(peer);
      this.index.set(peer, i);
    });
  }

  private check(p: LeanPeer): void {
    if (this.expected === 0) return;
    if (p.state === 'established' && p.size >= this.expected) {
      if (!this.complete.has(p)) {
        this.complete.add(p);
        if (p.held) this.sampledComplete++;
      }
    } else this.uncomplete(p);
    const t = now();
    if (this.sampledConvergedAt === undefined && this.sampledComplete === this.sampled && this.sampled > 0) this.sampledConvergedAt = t;
    if (this.convergedAt === undefined && this.complete.size === this.peers.length) this.convergedAt = t;
  }

  private uncomplete(p: LeanPeer): void {
    if (this.complete.delete(p) && p.held) this.sampledComplete--;
  }

  setExpected(n: number): void {
    this.expected = n;
    this.sampledConvergedAt = undefined;
    this.convergedAt = undefined;
    this.complete.clear();
    this.sampledComplete = 0;
    for (const p of this.peers) this.check(p);
  }

  async start(): Promise<void> {
    if (this.cmd.mode === 'listen') {
      await Promise.all(this.peers.map((_, i) => this.listen(i)));
    } else {
      for (let i = 0; i < this.peers.length; i++) this.queue.push(i);
      for (let k = 0; k < this.cmd.concurrency; k++) this.next(false);
    }
  }

  private enqueue(i: number): void {
    if (this.down.has(i) || this.peers[i]!.busy) return;
    this.queue.push(i);
    if (this.inFlight < this.cmd.concurrency) this.next(false);
  }

  /** Starts the next dial; `done` releases a slot first. */
  private next(done: boolean): void {
    if (done) this.inFlight = Math.max(0, this.inFlight - 1);
    while (this.inFlight < this.cmd.concurrency && this.queue.length > 0) {
      const i = this.queue.shift()!;
      const peer = this.peers[i]!;
      if (this.down.has(i) || peer.busy) continue;
      this.inFlight++;
      const socket = connect({ host: this.cmd.target.host, port: this.cmd.target.port, localAddress: peer.config.address });
      peer.attach(socket);
    }
  }

  private listen(i: number): Promise<void> {
    const peer = this.peers[i]!;
    const server = createServer((socket) => {
      // A second connection while one is up or opening: keep the first (the daemon resolves
      // collisions on its side by router ID; ours never initiates, so there is none here).
      if (peer.busy) socket.destroy();
      else peer.attach(socket);
    });
    this.servers.set(i, server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: peer.config.address, port: this.cmd.port, backlog: 16 }, () => resolve());
    });
  }

  drop(indices: number[]): void {
    for (const i of indices) {
      this.down.add(i);
      this.servers.get(i)?.close();
      this.servers.delete(i);
      this.peers[i]!.drop();
    }
  }

  async restore(indices: number[]): Promise<void> {
    for (const i of indices) this.down.delete(i);
    if (this.cmd.mode === 'listen') await Promise.all(indices.map((i) => this.listen(i)));
    else for (const i of indices) this.enqueue(i);
  }

  announce(i: number, prefixes: string[], withdraw: boolean): void {
    const ps = prefixes.map(v4);
    const peer = this.peers[i]!;
    const spec = peer.config.address;
    if (withdraw) {
      peer.outbound = peer.outbound.concat(withdrawUpdates(ps));
      peer.announce(withdrawUpdates(ps));
    } else peer.announce(announceUpdates(ps, { origin: 'igp', asPath: [], nextHop: spec, localPref: 100 }));
  }

  progress(): TesterProgress {
    let established = 0;
    let drops = 0;
    for (const p of this.peers) {
      if (p.state === 'established') established++;
      drops += p.drops;
    }
    return {
      type: 'progress',
      at: now(),
      established,
      complete: this.complete.size,
      sampled: this.sampled,
      sampledComplete: this.sampledComplete,
      drops,
      allEstablishedAt: this.allEstablishedAt,
      sampledConvergedAt: this.sampledConvergedAt,
      convergedAt: this.convergedAt,
      errors: this.errors,
    };
  }

  stop(): void {
    for (const s of this.servers.values()) s.close();
    for (const p of this.peers) p.drop();
  }
}

let cluster: Cluster | undefined;
const send = (m: unknown) => process.send?.(m);
let ticker: NodeJS.Timeout | undefined;

process.on('message', async (m: TesterCommand) => {
  try {
    switch (m.type) {
      case 'start':
        cluster = new Cluster(m);
        await cluster.start();
        ticker = setInterval(() => send(cluster!.progress()), 100);
        send({ type: 'started', at: now() });
        break;
      case 'drop':
        cluster!.drop(m.indices);
        send({ type: 'ok' });
        break;
      case 'restore':
        await cluster!.restore(m.indices);
        send({ type: 'ok' });
        break;
      case 'announce':
        cluster!.announce(m.index, m.prefixes, m.withdraw ?? false);
        send({ type: 'ok' });
        break;
      case 'expect':
        cluster!.setExpected(m.expected);
        send({ type: 'ok' });
        break;
      case 'stop':
        if (ticker) clearInterval(ticker);
        cluster?.stop();
        send({ type: 'ok' });
        setTimeout(() => process.exit(0), 100);
        break;
    }
  } catch (e) {
    send({ type: 'error', message: (e as Error).message });
  }
});
process.on('disconnect', () => process.exit(0));
