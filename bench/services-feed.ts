// The agent's side of an endpoint change before felix: the input builder
// (lib/services/service-input.ts) making this node's ServiceInput from --services Services and
// their EndpointSlices (--endpoints each) after one slice changed. podroute as the agent's feed
// runs it, told which Services' slices changed (the slices kept grouped by Service as they
// change), against the same builder given only the Services and slices, as the feed ran it
// before: every Service looked at, every slice grouped, the ports sorted. Each is timed over
// --updates changes after as many to warm up, in one process, the two alternating by change.
//
//   npx tsx bench/services-feed.ts [--services 10000] [--endpoints 10] [--updates 1000]   (no root)
import { hostname } from 'node:os';
import { type EndpointSlice, type Service, validateResource } from '../lib/resources/index.js';
import { ServiceInputBuilder, slicesByService } from '../lib/services/service-input.js';
import { numberArg } from './args.js';
import { count, median, ms, p99Note, percentile, table } from './policy-stats.js';

const arg = (name: string, d: number): number => numberArg(name, d, { min: 1, integer: true });
const SERVICES = arg('--services', 10_000);
const ENDPOINTS = arg('--endpoints', 10);
const UPDATES = arg('--updates', 1000);
if (SERVICES > 65_536) throw new Error('--services: at most 65,536 (cluster IPs come from 10.96.0.0/16)');

const key = (i: number) => `ns${i % 100}/svc${i}`;
const service = (i: number): Service =>
  validateResource({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: `svc${i}`, namespace: `ns${i % 100}` },
    spec: { clusterIP: `10.96.${i >> 8}.${i & 255}`, selector: { app: `a${i}` }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
  }) as Service;
/** Service i's slice, its endpoint 0 at its `generation`-th address (a pod rescheduled), one of them on this node. */
const slice = (i: number, generation: number): EndpointSlice => {
  const address = (n: number) => `10.${64 + ((n >> 16) & 63)}.${(n >> 8) & 255}.${n & 255}`;
  return validateResource({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `svc${i}-1`, namespace: `ns${i % 100}`, labels: { 'kubernetes.io/service-name': `svc${i}` } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080 }],
    endpoints: Array.from({ length: ENDPOINTS }, (_, j) => ({
      addresses: [address((i * ENDPOINTS + j) * 4 + (j === 0 ? generation : 0))],
      nodeName: j === 0 ? 'n1' : 'n2',
      conditions: { ready: true },
    })),
  }) as EndpointSlice;
};

function main(): void {
  const started = new Date();
  const services = Array.from({ length: SERVICES }, (_, i) => service(i));
  const slices = new Map(Array.from({ length: SERVICES }, (_, i) => [key(i), slice(i, 0)] as const));
  const grouped = slicesByService(slices.values()) as Map<string, readonly EndpointSlice[]>;
  const told = new ServiceInputBuilder('n1');
  const whole = new ServiceInputBuilder('n1');
  const rest = { nodeAddresses: ['192.168.0.1'], clusterCidrs: ['10.64.0.0/10'] };
  const t0 = performance.now();
  told.build({ services, slices: slices.values(), slicesByService: grouped, changed: new Set(), ...rest });
  const firstMs = performance.now() - t0;
  whole.build({ services, slices: slices.values(), ...rest });
  const times = { told: [] as number[], whole: [] as number[] };
  for (let k = 0; k < 2 * UPDATES; k++) {
    const i = (k * 7919 + 13) % SERVICES;
    const s = slice(i, 1 + (k % 3));
    slices.set(key(i), s);
    grouped.set(key(i), [s]);
    const runs: [keyof typeof times, () => void][] = [
      ['told', () => told.build({ services, slices: slices.values(), slicesByService: grouped, changed: new Set([key(i)]), ...rest })],
      ['whole', () => whole.build({ services, slices: slices.values(), ...rest })],
    ];
    if (k % 2) runs.reverse();
    for (const [name, run] of runs) {
      const t = performance.now();
      run();
      if (k >= UPDATES) times[name].push(performance.now() - t);
    }
  }
  const a = told.build({ services, slices: slices.values(), slicesByService: grouped, changed: new Set(), ...rest });
  const b = whole.build({ services, slices: slices.values(), ...rest });
  if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error('the two builders made different inputs');
  const row = (name: string, xs: number[]) => [name, ms(median(xs)), ms(percentile(xs, 99)), ms(Math.max(...xs))];
  console.log(
    `bench/services-feed — ${started.toISOString()} on ${hostname()}, node ${process.version}\n` +
      `command: npx tsx bench/services-feed.ts ${process.argv.slice(2).join(' ')}`.trimEnd(),
  );
  console.log(
    `\n${count(SERVICES)} Services × ${ENDPOINTS} endpoints in one slice each; the first build ${ms(firstMs)} ms; ` +
      `${UPDATES} endpoint changes timed after ${UPDATES} to warm up (ms):`,
  );
  console.log(
    table(
      ['input builder', 'p50', 'p99', 'max'],
      [
        row("told which Services' slices changed (the agent's feed)", times.told),
        row('every Service looked at (the reference)', times.whole),
      ],
    ),
  );
  console.log(
    `${p99Note(UPDATES)}. Ratio of the medians: ${(median(times.told) / median(times.whole)).toFixed(4)}×; the two inputs equal at the end.`,
  );
}

main();
