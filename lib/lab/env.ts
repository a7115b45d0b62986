// Pointing podroute on the host at a lab: the exports `podroute lab env` prints, the value
// `--lab` stands for, the datastore line of `lab status`, and where the lab's agents answer.
// Without them, apply and get on the host use the local file datastore, which no lab agent
// reads, and `node status` asks a control socket no lab agent listens on.
import { labDatastoreFlag } from './etcd.js';
import { labRuntime, runsAgent } from './runner.js';
import { listLabs, readState, stateRoot, type LabState } from './state.js';

/** A lab's datastore as the host reaches it. */
export interface LabDatastore {
  type: 'redis' | 'etcd';
  /** The Redis socket, or the etcd members' endpoints, comma separated. */
  address: string;
  /** What `--datastore` takes for it. */
  flag: string;
  /** The environment that points podroute at it (what `lab env` exports). */
  env: Record<string, string>;
}

export function labDatastore(state: LabState): LabDatastore | undefined {
  const flag = labDatastoreFlag(state);
  if (flag === undefined) return undefined;
  if (state.etcdEndpoints) {
    const address = state.etcdEndpoints.join(',');
    return { type: 'etcd', address, flag, env: { PODROUTE_DATASTORE: 'etcd', PODROUTE_ETCD_ENDPOINTS: address } };
  }
  return { type: 'redis', address: flag, flag, env: { PODROUTE_DATASTORE: 'redis', PODROUTE_REDIS_URL: flag } };
}

const quote = (v: string) => (/^[\w@%+=:,./-]+$/.test(v) ? v : `'${v.replace(/'/g, `'\\''`)}'`);

/** `lab env`: shell lines for eval; the first is a comment saying what they do. */
export function formatLabEnv(state: LabState): string {
  const ds = labDatastore(state);
  if (!ds) throw new Error(`lab ${state.name} runs no datastore (its topology has no datastore node)`);
  const lines = [
    `# lab ${state.name}'s datastore (${ds.type} ${ds.address}) for podroute apply, get, delete, ipam and policy: eval "$(podroute lab env ${state.name})"`,
    ...Object.entries(ds.env).map(([k, v]) => `export ${k}=${quote(v)}`),
  ];
  return `${lines.join('\n')}\n`;
}

/** The labs up on this host (none when their state folder cannot be read). */
export function labsUp(root = stateRoot()): string[] {
  try {
    return listLabs(root);
  } catch {
    return [];
  }
}

/**
 * For `podroute node status` on a host whose agents all run inside labs: which nodes of which
 * lab run one, and the command that asks one. Undefined when no lab is up.
 */
export function labAgentsHint(root = stateRoot()): string | undefined {
  const lines: string[] = [];
  for (const name of labsUp(root)) {
    const state = readState(root, name);
    if (!state) continue;
    const nodes = [...new Set([...state.namespaces.map((n) => n.node), ...(state.containers ?? []).map((c) => c.node)])].filter((n) =>
      runsAgent(state, n),
    );
    if (nodes.length === 0) continue;
    const where = labRuntime(state) === 'docker' ? 'each in its container' : 'each in its network namespace';
    lines.push(
      `lab ${name} is up here; its agents run inside its nodes ${nodes.join(', ')} (${where}), with their control sockets there:`,
      `  podroute lab exec ${name} ${nodes[0]} podroute node status`,
    );
  }
  return lines.length ? `${lines.join('\n')}\n` : undefined;
}
