// `podroute lab up --datastore etcd`: the topology's datastore node runs a three-member etcd
// cluster instead of Redis. The members talk to each other over loopback inside that node's
// namespace; clients reach them on Unix sockets in the lab folder (as the lab's Redis), so
// every node namespace reaches them with no route. Members are started in the foreground, so
// the PID the state file records is etcd's own, and `down` stops them by it. Each keeps its
// data in the lab folder: a member that died comes back with its data on the next `up`.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { etcdDatastore, type DatastoreConfig } from '../datastore/index.js';
import type { LabProcess, LabState } from './state.js';
import { isOurs, poll } from './system.js';
import type { TopologyNode } from './topology.js';

export const ETCD_MEMBERS = 3;
const PEER_PORT = 2380;

export type LabDatastore = 'redis' | 'etcd';

/** Helpers the runner owns: start a process in a node's namespace, find a live one, a log's tail. */
export interface LabProcesses {
  start(state: LabState, node: string, what: string, argv: string[]): LabProcess;
  alive(state: LabState, node: string, what: string): LabProcess | undefined;
  tail(file: string): string;
}

/** What every client of the lab (agents, CNI calls, exec lines, `lab pod`) opens. */
export function labDatastoreConfig(state: LabState): Exclude<DatastoreConfig, { type: 'memory' }> | undefined {
  if (state.etcdEndpoints) return { type: 'etcd', endpoints: state.etcdEndpoints };
  if (state.redisSocket) return { type: 'redis', url: state.redisSocket };
  return undefined;
}

/** The `--datastore` value an agent is given. */
export function labDatastoreFlag(state: LabState): string | undefined {
  if (state.etcdEndpoints) return `etcd://${state.etcdEndpoints.join(',')}`;
  return state.redisSocket;
}

export async function ensureEtcd(state: LabState, node: TopologyNode, procs: LabProcesses): Promise<void> {
  const dir = join(state.dir, 'etcd');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const names = Array.from({ length: ETCD_MEMBERS }, (_, i) => `m${i}`);
  const cluster = names.map((n, i) => `${n}=http://127.0.0.1:${PEER_PORT + 10 * i}`).join(',');
  // etcd names a unix:// listener's socket by the URL's host, relative to its working folder.
  const sockets = names.map((n) => `etcd-${n}.sock:2379`);
  state.etcdEndpoints = sockets.map((s) => `unix://${join(dir, s)}`);
  const started: LabProcess[] = [];
  names.forEach((n, i) => {
    const what = `etcd-${n}`;
    const running = procs.alive(state, node.name, what);
    if (running) {
      started.push(running);
      return;
    }
    // A killed member leaves its socket file behind; etcd would not bind over it.
    rmSync(join(dir, sockets[i]!), { force: true });
    const peer = `http://127.0.0.1:${PEER_PORT + 10 * i}`;
    const client = `unix://${sockets[i]}`;
    const argv = [
      'sh',
      '-c',
      'cd "$0" && exec "$@"',
      dir,
      'etcd',
      '--name',
      n,
      '--data-dir',
      join(dir, n),
      '--listen-client-urls',
      client,
      '--advertise-client-urls',
      client,
      '--listen-peer-urls',
      peer,
      '--initial-advertise-peer-urls',
      peer,
      '--initial-cluster',
      cluster,
      '--initial-cluster-token',
      `podroute-lab-${state.name}`,
      '--initial-cluster-state',
      'new',
      '--logger',
      'zap',
      '--log-level',
      'warn',
    ];
    started.push(procs.start(state, node.name, what, argv));
  });
  await poll(
    `etcd cluster on ${dir}`,
    async () => {
      for (const p of started) if (!isOurs(p)) throw new Error(`etcd ${p.what} exited: ${procs.tail(p.log)}`);
      // Each member on its own: a linearizable read through it answers only once it has joined
      // a cluster with a leader and a quorum.
      for (const endpoint of state.etcdEndpoints!) {
        const ds = await etcdDatastore({ endpoints: [endpoint], connectWaitMs: 1_000, commandTimeoutMs: 2_000 }).catch(() => undefined);
        if (!ds) return undefined;
        try {
          await ds.revision();
        } catch {
          return undefined;
        } finally {
          await ds.close();
        }
      }
      return true;
    },
    30_000,
  );
}
