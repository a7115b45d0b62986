// `podroute policy`: what the cluster's policies mean for one pod or one connection, read from
// the datastore and computed by the same calculation graph that feeds every node's felix; the
// rule counters of a running agent (how often each rule matched, as calicoctl shows); and the
// node's nftables table as felix means it or as the kernel holds it.
import { callControl } from '../bgpd/control.js';
import { datastoreConfigFromEnv, datastoreFromFlag, openDatastore, type BackendDatastore, openFileDatastore } from '../datastore/index.js';
import type { Resource } from '../resources/index.js';
import { CALCULATION_KINDS, formatPodExplanation, formatVerdict, PolicyExplainer } from '../policy/index.js';
import { dispatch, UsageError, type CommandSpec } from './args.js';
import { datastoreFile, type CommandIo } from './datastore.js';
import { LAB_FLAG, labDatastoreFlag } from './datastore-lab.js';
import { AGENT_CONTROL_FLAG, agentControl } from './flags.js';
import { emit, OUTPUT, outputOf } from './output.js';

const DATASTORE_TEXT = `datastore: the file podroute apply writes (PODROUTE_STATE_DIR, see podroute get --help), or
  PODROUTE_REDIS_URL=redis://host:port, or PODROUTE_ETCD_ENDPOINTS=host:2379,host:2379`;

const PROTOCOLS = ['tcp', 'udp', 'sctp', 'icmp'] as const;
type Protocol = (typeof PROTOCOLS)[number];

/** Every resource the calculation graph reads. */
export async function calculationResources(ds: BackendDatastore): Promise<Resource[]> {
  const out: Resource[] = [];
  for (const kind of CALCULATION_KINDS) out.push(...((await ds.list(kind)).items as Resource[]));
  return out;
}

/**
 * The explainer over what the datastore holds now: a lab's (`--lab`), else the one the
 * environment names; `ds` (tests) instead of either.
 */
async function withExplainer<T>(ds: BackendDatastore | undefined, lab: unknown, use: (e: PolicyExplainer) => T): Promise<T> {
  // What `podroute apply` wrote: the file datastore unless Redis or etcd is configured.
  const flag = typeof lab === 'string' ? labDatastoreFlag(lab, undefined) : undefined;
  const file = ds ? undefined : datastoreFile(flag);
  const config = flag !== undefined ? datastoreFromFlag(flag) : datastoreConfigFromEnv();
  const store = ds ?? (file !== undefined ? await openFileDatastore(file) : await openDatastore(config));
  try {
    return use(new PolicyExplainer(await calculationResources(store)));
  } finally {
    if (store !== ds) await store.close();
  }
}

/** `podroute policy` and its commands; `ds` replaces the datastore the environment names. */
export function policyCommand(io: CommandIo, ds?: BackendDatastore): CommandSpec {
  return {
    name: 'policy',
    summary: "what the network policies mean for a pod or a connection, their counters, and the node's table",
    subcommands: [
      {
        name: 'explain',
        summary: 'what may reach the pod, what it may reach, and which rule decides',
        description: DATASTORE_TEXT,
        args: '<namespace>/<pod>',
        maxPositionals: 1,
        options: { lab: LAB_FLAG },
        async run(p) {
          const ref = p.positionals[0];
          if (!ref?.includes('/')) throw new UsageError('policy explain: give one pod as <namespace>/<pod>');
          const slash = ref.indexOf('/');
          const text = await withExplainer(ds, p.values.lab, (e) =>
            formatPodExplanation(e.explainPod(ref.slice(0, slash), ref.slice(slash + 1))),
          );
          io.stdout(`${text}\n`);
          return 0;
        },
      },
      {
        name: 'verdict',
        summary: 'one connection: allowed or not, and why (pods as namespace/pod or by address)',
        description: DATASTORE_TEXT,
        args: '<from> <to> <tcp|udp|sctp|icmp> [port]',
        maxPositionals: 4,
        options: { lab: LAB_FLAG },
        async run(p) {
          const [from, to, protocolText, portText] = p.positionals;
          if (!from || !to || !protocolText) throw new UsageError('policy verdict: <from> <to> <tcp|udp|sctp|icmp> [port]');
          const protocol = protocolText.toLowerCase() as Protocol;
          if (!PROTOCOLS.includes(protocol))
            throw new UsageError(`policy verdict: protocol: ${JSON.stringify(protocolText)} must be one of ${PROTOCOLS.join(', ')}`);
          const port = portText === undefined ? undefined : Number(portText);
          if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535))
            throw new UsageError(`policy verdict: port: ${JSON.stringify(portText)} is not a port number (1-65535)`);
          const text = await withExplainer(ds, p.values.lab, (e) => formatVerdict(e.verdict(from, to, protocol, port)));
          io.stdout(`${text}\n`);
          return 0;
        },
      },
      {
        name: 'counters',
        summary: 'packets and bytes per policy rule on this node (the running agent)',
        options: { control: AGENT_CONTROL_FLAG, output: { ...OUTPUT, choices: ['json', 'yaml', 'table'] } },
        async run(p) {
          const r = await callControl<{ counters: Record<string, { packets: number; bytes: number }>; refused: Record<string, string> }>(
            agentControl(p.values.control),
            'GET',
            '/policy/counters',
          );
          const o = outputOf(p.values.output);
          if (o === 'json' || o === 'yaml') io.stdout(emit(r, o));
          else {
            io.stdout(formatCounters(r.counters));
            for (const [resource, why] of Object.entries(r.refused)) io.stdout(`refused ${resource}: ${why}\n`);
          }
          return 0;
        },
      },
      {
        name: 'dump',
        summary: "this node's policy table in nft syntax: what felix means, or with --kernel what the kernel holds",
        description: `Without --kernel: felix's desired table (inet podroute), as nft -f reads it, with the rule
comments felix writes (id|hash of the statements). With --kernel: the table the kernel holds, read
back by netlink by the running agent, each line marked: '  ' as felix meant, '- ' felix meant it and
the kernel lacks it, '+ ' the kernel has it and felix did not mean it. A kernel rule is printed in
felix's words when its comment is one felix wrote (the hash covers its statements), else named by
its comment. Elements are one per line, sorted. Exit status with --kernel: 0 when the kernel holds
what felix meant, 1 when a line is marked.`,
        options: {
          control: AGENT_CONTROL_FLAG,
          kernel: { type: 'boolean', help: "the kernel's table, marked where it differs from felix's" },
        },
        async run(p) {
          const kernel = p.values.kernel === true;
          const r = await callControl<{ text: string; differs: boolean }>(
            agentControl(p.values.control),
            'GET',
            `/policy/table${kernel ? '?kernel=1' : ''}`,
          );
          io.stdout(r.text);
          return kernel && r.differs ? 1 : 0;
        },
      },
    ],
  };
}

/** Runs `podroute policy <argv>` through the command tree (help and unknown flags included); returns the exit code. */
export function runPolicyCommand(argv: readonly string[], io: CommandIo, ds?: BackendDatastore): Promise<number> {
  return dispatch({ ...policyCommand(io, ds), name: 'podroute policy' }, argv, io);
}

/** One line per rule id, in id order: the policy and rule first, then what it matched. */
export function formatCounters(counters: Record<string, { packets: number; bytes: number }>): string {
  const rows = [['RULE', 'PACKETS', 'BYTES']];
  for (const id of Object.keys(counters).sort()) rows.push([id, String(counters[id].packets), String(counters[id].bytes)]);
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return `${rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')).join('\n')}\n`;
}
