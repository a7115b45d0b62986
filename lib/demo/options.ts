// `podroute demo` flags. Bad values are refused by name before anything listens.
import { parseArgs } from 'node:util';
import { parseCidr } from '../../ip/index.js';

export interface DemoOptions {
  nodes: number;
  podsPerNode: number;
  once: boolean;
  /** Where the final state goes as JSON ('-': stdout, instead of the view). */
  json?: string;
  /** Longest wait for one phase to converge (s). */
  timeout: number;
  /** 0: a free port. */
  port: number;
  pool: string;
  /** How often the view is redrawn (ms). */
  interval: number;
  help: boolean;
}

export const DEMO_USAGE = `usage: podroute demo [--nodes N] [--once] [--json FILE|-] [flags]

Runs a whole cluster in this process, with nothing to install and no root: node agents on
127.0.0.x, the memory datastore, in-memory dataplanes and real BGP sessions over loopback.
Pods are added through IPAM and the CNI plugin's steps. Phases: a full mesh; a route
reflector (node-1) with the mesh off; a top-of-rack router every node peers with; a pod
deleted and a node added, live. The view shows nodes, sessions, pods and every node's routes.

  --nodes N        nodes to start (2-50, default 4)
  --pods N         pods per node (1-60, default 2)
  --once           exit 0 once the last phase has converged, with the final view;
                   exit 1 if a phase does not converge within --timeout
  --json FILE|-    also write the final state (nodes, sessions, RIBs, routes) as JSON; - for stdout
  --timeout S      longest wait for a phase to converge (default 30)
  --port N         the BGP port every node listens on (default: a free one)
  --pool CIDR      the IP pool (default 10.65.0.0/16)
  --interval MS    how often the view is redrawn (default 500)
  Ctrl-C stops every agent and exits 0.
`;

function integer(name: string, text: string | undefined, def: number, min: number, max: number): number {
  if (text === undefined) return def;
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max)
    throw new Error(`--${name}: ${JSON.stringify(text)} is not a whole number from ${min} to ${max}`);
  return Number(text);
}

export function parseDemoOptions(args: string[]): DemoOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        nodes: { type: 'string' },
        pods: { type: 'string' },
        once: { type: 'boolean' },
        json: { type: 'string' },
        timeout: { type: 'string' },
        port: { type: 'string' },
        pool: { type: 'string' },
        interval: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    throw new Error((e as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
  }
  const pool = (values.pool as string | undefined) ?? '10.65.0.0/16';
  const cidr = parseCidr(pool, '--pool');
  if (cidr.family !== 4 || cidr.prefixLength > 26) throw new Error(`--pool: ${pool} must be an IPv4 CIDR of /26 or wider`);
  if (values.json === '') throw new Error('--json: a file name, or - for stdout');
  const nodes = integer('nodes', values.nodes as string | undefined, 4, 2, 50);
  // One /26 per node, and one more node joins live: a node without a block of its own would
  // borrow /32s, which this demo does not show.
  const blocks = 2 ** (26 - cidr.prefixLength);
  if (blocks < nodes + 1) throw new Error(`--pool: ${pool} holds ${blocks} blocks of /26, fewer than the ${nodes + 1} nodes the demo runs`);
  return {
    nodes,
    podsPerNode: integer('pods', values.pods as string | undefined, 2, 1, 60),
    once: values.once === true,
    json: values.json as string | undefined,
    timeout: integer('timeout', values.timeout as string | undefined, 30, 1, 3600),
    port: integer('port', values.port as string | undefined, 0, 1024, 65535),
    pool,
    interval: integer('interval', values.interval as string | undefined, 500, 50, 60_000),
    help: values.help === true,
  };
}
