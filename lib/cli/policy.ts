// `podroute policy`: what the cluster's policies mean for one pod or one connection, read from
// the datastore and computed by the same calculation graph that feeds every node's felix:
//   podroute policy explain <namespace>/<pod>
//   podroute policy verdict <from> <to> <tcp|udp|sctp|icmp> [port]
// and the rule counters of a running agent (how often each rule matched, as calicoctl shows).
import { callControl } from '../bgpd/control.js';
import { datastoreConfigFromEnv, openDatastore, type BackendDatastore, openFileDatastore } from '../datastore/index.js';
import type { Resource } from '../resources/index.js';
import { CALCULATION_KINDS, formatPodExplanation, formatVerdict, PolicyExplainer } from '../policy/index.js';
import { datastoreFile, type CommandIo } from './datastore.js';
import { DEFAULT_CONTROL } from './node.js';

export const POLICY_USAGE = `usage:
  podroute policy explain <namespace>/<pod>              what may reach the pod, what it may reach, and which rule decides
  podroute policy verdict <from> <to> <protocol> [port]  one connection: allowed or not, and why (pods as ns/pod or by address)
  podroute policy counters [--control <socket>]          packets and bytes per policy rule on this node (the running agent)
datastore: the file podroute apply writes (PODROUTE_STATE_DIR, see podroute get --help), or PODROUTE_REDIS_URL=redis://host:port,
  or PODROUTE_ETCD_ENDPOINTS=host:2379,host:2379
`;

const PROTOCOLS = new Set(['tcp', 'udp', 'sctp', 'icmp']);

/** Every resource the calculation graph reads. */
export async function calculationResources(ds: BackendDatastore): Promise<Resource[]> {
  const out: Resource[] = [];
  for (const kind of CALCULATION_KINDS) out.push(...((await ds.list(kind)).items as Resource[]));
  return out;
}

async function explainer(
  _io: CommandIo,
  ds?: BackendDatastore,
): Promise<{ explainer: PolicyExplainer; close: () => Promise<void> } | undefined> {
  let store = ds;
  if (!store) {
    // What `podroute apply` wrote: the file datastore unless Redis or etcd is configured.
    const file = datastoreFile(undefined);
    store = file !== undefined ? await openFileDatastore(file) : await openDatastore(datastoreConfigFromEnv());
  }
  const opened = store;
  const resources = await calculationResources(opened);
  return { explainer: new PolicyExplainer(resources), close: () => (ds ? Promise.resolve() : opened.close()) };
}

export async function runPolicyCommand(argv: readonly string[], io: CommandIo, ds?: BackendDatastore): Promise<number> {
  const [sub, ...args] = argv;
  if (sub === undefined || sub === '-h' || sub === '--help' || sub === 'help') {
    (sub === undefined ? io.stderr : io.stdout)(POLICY_USAGE);
    return sub === undefined ? 2 : 0;
  }
  if (sub === 'explain') {
    const ref = args[0];
    if (args.length !== 1 || !ref?.includes('/')) {
      io.stderr(`podroute policy explain: give one pod as <namespace>/<pod>\n\n${POLICY_USAGE}`);
      return 2;
    }
    const e = await explainer(io, ds);
    if (!e) return 2;
    try {
      const slash = ref.indexOf('/');
      io.stdout(`${formatPodExplanation(e.explainer.explainPod(ref.slice(0, slash), ref.slice(slash + 1)))}\n`);
      return 0;
    } finally {
      await e.close();
    }
  }
  if (sub === 'verdict') {
    const [from, to, protocol, portText] = args;
    if (!from || !to || !protocol || args.length > 4 || !PROTOCOLS.has(protocol.toLowerCase())) {
      io.stderr(`podroute policy verdict: <from> <to> <tcp|udp|sctp|icmp> [port]\n\n${POLICY_USAGE}`);
      return 2;
    }
    const port = portText === undefined ? undefined : Number(portText);
    if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535)) {
      io.stderr(`podroute policy verdict: port: ${JSON.stringify(portText)} is not a port number (1-65535)\n`);
      return 2;
    }
    const e = await explainer(io, ds);
    if (!e) return 2;
    try {
      const v = e.explainer.verdict(from, to, protocol.toLowerCase() as 'tcp' | 'udp' | 'sctp' | 'icmp', port);
      io.stdout(`${formatVerdict(v)}\n`);
      return 0;
    } finally {
      await e.close();
    }
  }
  if (sub === 'counters') {
    const i = args.indexOf('--control');
    const control = i >= 0 ? args[i + 1] : (process.env.PODROUTE_CONTROL ?? DEFAULT_CONTROL);
    if (!control || args.length !== (i >= 0 ? 2 : 0)) {
      io.stderr(`podroute policy counters: [--control <socket>]\n`);
      return 2;
    }
    const r = await callControl<{ counters: Record<string, { packets: number; bytes: number }>; refused: Record<string, string> }>(
      control,
      'GET',
      '/policy/counters',
    );
    io.stdout(formatCounters(r.counters));
    for (const [resource, why] of Object.entries(r.refused)) io.stdout(`refused ${resource}: ${why}\n`);
    return 0;
  }
  io.stderr(`podroute policy: unknown subcommand ${JSON.stringify(sub)}\n\n${POLICY_USAGE}`);
  return 2;
}

/** One line per rule id, in id order: the policy and rule first, then what it matched. */
export function formatCounters(counters: Record<string, { packets: number; bytes: number }>): string {
  const rows = [['RULE', 'PACKETS', 'BYTES']];
  for (const id of Object.keys(counters).sort()) rows.push([id, String(counters[id].packets), String(counters[id].bytes)]);
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return `${rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')).join('\n')}\n`;
}
