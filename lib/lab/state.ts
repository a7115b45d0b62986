// What `podroute lab up` created, written down as it goes: `down` removes exactly this (by
// PID and start time, by namespace name) and nothing else, even after a crash half-way up.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { WorkloadEndpointPort } from '../resources/index.js';
import type { Started } from './system.js';
import type { NodeRole } from './topology.js';

export const DEFAULT_STATE_ROOT = '/var/run/podroute/lab';

export interface LabProcess extends Started {
  node: string;
  /** zebra, bgpd, agent, redis, etcd-m0 ... */
  what: string;
  argv: string[];
  log: string;
}

export interface LabPod {
  name: string;
  node: string;
  /** The pod's network namespace. */
  namespace: string;
  containerId: string;
  ip?: string;
  /** Its IPv6 address, in a dual-stack lab (its node has an IPv6 address). */
  ip6?: string;
  /** The pod's Kubernetes namespace; absent: default. */
  k8sNamespace?: string;
  /** The pod's own labels (what podroute-cni got in args.cni.labels, or the last relabel). */
  labels?: Record<string, string>;
  ports?: WorkloadEndpointPort[];
}

/** A node's container (docker runtime), and the holder container that keeps its network namespace. */
export interface LabContainer {
  node: string;
  /** clab-<lab>-<node>, as containerlab names it. */
  name: string;
  /** Holds the node's network namespace, so the node container can stop and start without losing its links. */
  holder: string;
  /** What the node runs (its image decides): podroute, frr, redis, linux. */
  role: NodeRole;
}

export interface LabState {
  name: string;
  /** How the nodes run: network namespaces (default; absent in older state files) or containers. */
  runtime?: 'netns' | 'docker';
  /** The docker runtime's engine (`docker -H`). */
  dockerHost?: string;
  /** docker runtime: the containers this lab created, by node. */
  containers?: LabContainer[];
  /** docker runtime: host bridges this lab created (one per `kind: bridge` node). */
  bridges?: { node: string; name: string }[];
  /** docker runtime: the host ends of links to bridges, by endpoint (node:iface). */
  hostLinks?: { endpoint: string; name: string }[];
  topology: string;
  prefix: string;
  /** This lab's folder: state.json, logs, FRR instance folders, sockets. */
  dir: string;
  redisSocket?: string;
  /** With `lab up --datastore etcd`: the members' client sockets (unix:///...), instead of Redis. */
  etcdEndpoints?: string[];
  /** Namespaces this lab created, by node (pods are in `pods`). */
  namespaces: { node: string; name: string }[];
  processes: LabProcess[];
  pods: LabPod[];
}

export function stateRoot(explicit?: string): string {
  return explicit ?? process.env.PODROUTE_LAB_STATE_DIR ?? DEFAULT_STATE_ROOT;
}

export function labDir(root: string, name: string): string {
  return join(root, name);
}

export function readState(root: string, name: string): LabState | undefined {
  const file = join(labDir(root, name), 'state.json');
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as LabState;
}

/** Written to a temporary file and renamed, so a crash never leaves half a state file. */
export function writeState(state: LabState): void {
  mkdirSync(state.dir, { recursive: true });
  const file = join(state.dir, 'state.json');
  writeFileSync(`${file}.tmp`, JSON.stringify(state, null, 2) + '\n');
  renameSync(`${file}.tmp`, file);
}

/** Names of the labs that have a state file under `root`. */
export function listLabs(root: string): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((n) => existsSync(join(root, n, 'state.json')))
    .sort();
}
