// Pointing podroute on the host at a lab's datastore: the exports `podroute lab env` prints, the
// value `--lab` stands for, and the datastore line of `lab status`. Without them, apply and get
// on the host read and write the local file datastore, which no lab agent ever reads.
import { labDatastoreFlag } from './etcd.js';
import { listLabs, stateRoot, type LabState } from './state.js';

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
