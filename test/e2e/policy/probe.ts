// The probe matrix with real packets: one probe agent per pod (probe-agent.ts, started in the
// pod's network namespace, stopped by PID), and a prober that asks every pod at once to try
// every (target pod, protocol, port). A 9×9×3 matrix costs one timeout (plus one retry) of
// wall time, not 243 of them. The result is a TruthTable keyed like the reference's.
import { request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManagedProcess } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';
import { type ModelPod, type Probe, podKey, probeKey } from '../../support/policy/model.js';
import type { ProbeBatch, ProbeRequest, ProbeResult } from './probe-agent.js';
import { TruthTable } from '../../support/policy/truth-table.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const ROOT = join(HERE, '../../..');
const AGENT = join(HERE, 'probe-agent.ts');

/** Where an agent runs: a key ("x/a" or "internet"), the network namespace, the control socket. */
export interface AgentPlace {
  readonly key: string;
  readonly netns: string;
}

export interface MatrixOptions {
  /** Per attempt; TCP connect and UDP answer alike. */
  readonly timeoutMs?: number;
  /** 2 = retry a failed probe once. */
  readonly attempts?: number;
}

export interface Measured {
  readonly table: TruthTable;
  /** Every probe's result, by "from>to>proto/port": the reply names the address the far side saw. */
  readonly results: ReadonlyMap<string, ProbeResult>;
  readonly ms: number;
}

export const resultKey = (from: string, to: string, probe: Probe): string => `${from}>${to}>${probeKey(probe)}`;

export class Prober {
  private readonly agents = new Map<string, { process: ManagedProcess; control: string }>();

  /** `dir` holds the agents' control sockets and logs. */
  constructor(
    readonly dir: string,
    readonly tcpPorts: readonly number[] = [80, 81],
    readonly udpPorts: readonly number[] = [80],
  ) {}

  /** Starts an agent in each place (in parallel) and waits until each answers. */
  async start(places: readonly AgentPlace[]): Promise<void> {
    await Promise.all(places.map((p) => this.startOne(p)));
  }

  private async startOne(place: AgentPlace): Promise<void> {
    if (this.agents.has(place.key)) throw new Error(`probe agent ${place.key} already runs`);
    const file = place.key.replace(/[^A-Za-z0-9_-]/g, '_');
    const control = join(this.dir, `${file}.sock`);
    const argv = [
      'ip',
      'netns',
      'exec',
      place.netns,
      process.execPath,
      '--import',
      'tsx',
      AGENT,
      '--name',
      place.key,
      '--control',
      control,
    ];
    if (this.tcpPorts.length) argv.push('--tcp', this.tcpPorts.join(','));
    if (this.udpPorts.length) argv.push('--udp', this.udpPorts.join(','));
    const proc = new ManagedProcess(argv, { name: `probe-agent ${place.key}`, logFile: join(this.dir, `${file}.log`), cwd: ROOT });
    this.agents.set(place.key, { process: proc, control });
    await waitFor(
      () => {
        if (!proc.running) throw new Error(`probe agent ${place.key} exited: ${proc.tail()}`);
        return proc.tail().includes(`ready ${place.key}`);
      },
      { what: `probe agent ${place.key} in ${place.netns}`, timeoutMs: 20_000, intervalMs: 50 },
    );
  }

  /** Stops one agent (a pod about to go), by its PID. */
  async stopOne(key: string): Promise<void> {
    const a = this.agents.get(key);
    if (!a) return;
    this.agents.delete(key);
    await a.process.stop(2_000);
  }

  /** Stops every agent by PID; safe to call twice. */
  async stop(): Promise<void> {
    await Promise.all([...this.agents.keys()].map((k) => this.stopOne(k)));
  }

  pids(): number[] {
    return [...this.agents.values()].map((a) => a.process.pid);
  }

  /** Runs a batch of probes from inside one place. */
  batch(from: string, probes: readonly ProbeRequest[], options: MatrixOptions = {}): Promise<ProbeResult[]> {
    const a = this.agents.get(from);
    if (!a) return Promise.reject(new Error(`no probe agent in ${from}`));
    const body: ProbeBatch = { probes, timeoutMs: options.timeoutMs ?? 1_000, attempts: options.attempts ?? 2 };
    const text = JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          socketPath: a.control,
          path: '/probe',
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) },
        },
        (res) => {
          let out = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (out += d));
          res.on('end', () => {
            if (res.statusCode !== 200) reject(new Error(`probe agent ${from}: ${res.statusCode} ${out}`));
            else resolve(JSON.parse(out) as ProbeResult[]);
          });
        },
      );
      req.setTimeout(60_000, () => req.destroy(new Error(`probe agent ${from}: no answer in 60 s`)));
      req.on('error', reject);
      req.end(text);
    });
  }

  /** One probe from `from` to an address. */
  async one(from: string, protocol: 'TCP' | 'UDP', host: string, port: number, options: MatrixOptions = {}): Promise<ProbeResult> {
    const [r] = await this.batch(from, [{ id: 'one', protocol, host, port }], options);
    return r!;
  }

  /**
   * The whole matrix: from every pod to every pod on every probe, all pods at once. SCTP
   * probes are refused here: the agents speak TCP and UDP (SCTP is probed in test/e2e/real-kernel).
   */
  async matrix(pods: readonly ModelPod[], probes: readonly Probe[], options: MatrixOptions = {}): Promise<Measured> {
    const t0 = Date.now();
    for (const p of probes) if (p.protocol === 'SCTP') throw new Error('the probe agents do not speak SCTP');
    const table = new TruthTable(pods.map(podKey), probes);
    const results = new Map<string, ProbeResult>();
    await Promise.all(
      pods.map(async (from) => {
        const requests: ProbeRequest[] = [];
        for (const to of pods)
          for (const probe of probes)
            requests.push({
              id: resultKey(podKey(from), podKey(to), probe),
              protocol: probe.protocol as 'TCP' | 'UDP',
              host: to.ip,
              port: probe.port,
            });
        for (const r of await this.batch(podKey(from), requests, options)) results.set(r.id, r);
      }),
    );
    for (const from of pods)
      for (const to of pods)
        for (const probe of probes) {
          const r = results.get(resultKey(podKey(from), podKey(to), probe));
          // An answer from another pod than the one addressed is no proof of this connection.
          if (r) table.set(podKey(from), podKey(to), probe, r.ok && r.reply?.split(' ')[0] === podKey(to));
        }
    return { table, results, ms: Date.now() - t0 };
  }
}
