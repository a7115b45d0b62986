// `podroute demo`'s options from its flags (lib/cli/demo.ts declares them). Bad values are
// refused by name before anything listens.
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
}

function integer(name: string, text: string | undefined, def: number, min: number, max: number): number {
  if (text === undefined) return def;
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max)
    throw new Error(`--${name}: ${JSON.stringify(text)} is not a whole number from ${min} to ${max}`);
  return Number(text);
}

/** The flags of `podroute demo` as the command line gave them (text, unchecked), to the demo's options. */
export interface DemoFlags {
  nodes?: string;
  pods?: string;
  once?: boolean;
  json?: string;
  timeout?: string;
  port?: string;
  pool?: string;
  interval?: string;
}

export function demoOptions(values: DemoFlags): DemoOptions {
  const pool = values.pool ?? '10.65.0.0/16';
  const cidr = parseCidr(pool, '--pool');
  if (cidr.family !== 4 || cidr.prefixLength > 26) throw new Error(`--pool: ${pool} must be an IPv4 CIDR of /26 or wider`);
  if (values.json === '') throw new Error('--json: a file name, or - for stdout');
  const nodes = integer('nodes', values.nodes, 4, 2, 50);
  // One /26 per node, and one more node joins live: a node without a block of its own would
  // borrow /32s, which this demo does not show.
  const blocks = 2 ** (26 - cidr.prefixLength);
  if (blocks < nodes + 1) throw new Error(`--pool: ${pool} holds ${blocks} blocks of /26, fewer than the ${nodes + 1} nodes the demo runs`);
  return {
    nodes,
    podsPerNode: integer('pods', values.pods, 2, 1, 60),
    once: values.once === true,
    json: values.json,
    timeout: integer('timeout', values.timeout, 30, 1, 3600),
    port: integer('port', values.port, 0, 1024, 65535),
    pool,
    interval: integer('interval', values.interval, 500, 50, 60_000),
  };
}
