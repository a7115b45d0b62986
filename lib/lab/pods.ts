// Pods inside a lab: a namespace per pod, wired to its node by running the podroute-cni
// plugin in the node's namespace exactly as a container runtime would, with the pod's
// Kubernetes namespace in CNI_ARGS and its labels in args.cni.labels. A pod is known by
// "name" in the default namespace and by "namespace/name" elsewhere, so x/a and y/a coexist.
import { join } from 'node:path';
import { cidrAddress } from '../../ip/index.js';
import { AlreadyExistsError, openDatastore, type BackendDatastore } from '../datastore/index.js';
import {
  API_VERSION_K8S_CORE,
  LABEL_NAMESPACE,
  LABEL_ORCHESTRATOR,
  type Namespace,
  type WorkloadEndpoint,
  type WorkloadEndpointPort,
} from '../resources/index.js';
import { labDatastoreConfig } from './etcd.js';
import { containerCni } from './containers.js';
import { labRuntime, packageRoot, runsAgent } from './runner.js';
import { writeState, type LabPod, type LabState } from './state.js';
import { execCommand, listNetns, run } from './system.js';

export const DEFAULT_NAMESPACE = 'default';
const DNS_LABEL = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

export interface PodOptions {
  /** The pod's Kubernetes namespace (K8S_POD_NAMESPACE); default "default". */
  namespace?: string;
  /** The pod's labels, passed as args.cni.labels. */
  labels?: Record<string, string>;
  /** Its named ports, passed as args.cni.ports. */
  ports?: WorkloadEndpointPort[];
}

/** The pod's Kubernetes namespace (state files written before namespaces have none: default). */
export const podK8sNamespace = (pod: Pick<LabPod, 'k8sNamespace'>): string => pod.k8sNamespace ?? DEFAULT_NAMESPACE;

/** How the lab names a pod: "name" in the default namespace, "namespace/name" elsewhere. */
export function podRef(pod: Pick<LabPod, 'name' | 'k8sNamespace'>): string {
  const ns = podK8sNamespace(pod);
  return ns === DEFAULT_NAMESPACE ? pod.name : `${ns}/${pod.name}`;
}

/** The pod's network namespace: unchanged for the default namespace, "<ns>.<pod>" otherwise (neither holds a dot). */
export const podNamespace = (state: Pick<LabState, 'prefix'>, pod: string, namespace = DEFAULT_NAMESPACE): string =>
  namespace === DEFAULT_NAMESPACE ? `${state.prefix}pod-${pod}` : `${state.prefix}pod-${namespace}.${pod}`;

/**
 * The pod a user names: "ns/name", or "name" with `namespace` (default: the default
 * namespace, else the only pod of that name in any namespace).
 */
export function findPod(state: LabState, ref: string, namespace?: string): LabPod | undefined {
  const slash = ref.indexOf('/');
  const [ns, name] = slash >= 0 ? [ref.slice(0, slash), ref.slice(slash + 1)] : [namespace, ref];
  if (ns !== undefined) return state.pods.find((p) => p.name === name && podK8sNamespace(p) === ns);
  const inDefault = state.pods.find((p) => p.name === name && podK8sNamespace(p) === DEFAULT_NAMESPACE);
  if (inDefault) return inDefault;
  const any = state.pods.filter((p) => p.name === name);
  if (any.length > 1)
    throw new Error(`pod ${name} is in several namespaces (${any.map(podK8sNamespace).join(', ')}): say which, as namespace/${name}`);
  return any[0];
}

function mustPod(state: LabState, ref: string, namespace?: string): LabPod {
  const pod = findPod(state, ref, namespace);
  if (!pod)
    throw new Error(`pod ${JSON.stringify(namespace && !ref.includes('/') ? `${namespace}/${ref}` : ref)} is not in lab ${state.name}`);
  return pod;
}

/** Calico's IPAM choice of families: both when the pod's node has an IPv6 address (a dual-stack lab), else the plugin's default, IPv4. */
function netconf(state: LabState, pod: LabPod, dualStack: boolean): string {
  const cni: Record<string, unknown> = {};
  if (pod.labels && Object.keys(pod.labels).length > 0) cni.labels = Object.entries(pod.labels).map(([key, value]) => ({ key, value }));
  if (pod.ports && pod.ports.length > 0) cni.ports = pod.ports;
  return JSON.stringify({
    cniVersion: '1.0.0',
    name: 'k8s-pod-network',
    type: 'podroute-cni',
    nodename: pod.node,
    datastore: labDatastoreConfig(state),
    ...(dualStack ? { ipam: { assign_ipv4: 'true', assign_ipv6: 'true' } } : {}),
    ...(Object.keys(cni).length > 0 ? { args: { cni } } : {}),
  });
}

async function callCni(
  state: LabState,
  pod: LabPod,
  command: 'ADD' | 'DEL',
  dualStack = pod.ip6 !== undefined,
): Promise<{ code: number; stdout: string; stderr: string }> {
  if (labRuntime(state) === 'docker')
    // Inside the node's container the plugin keeps its per-node record in the container's own file system.
    return containerCni(
      state,
      pod.node,
      {
        CNI_COMMAND: command,
        CNI_CONTAINERID: pod.containerId,
        CNI_NETNS: `/var/run/netns/${pod.namespace}`,
        CNI_IFNAME: 'eth0',
        CNI_ARGS: `K8S_POD_NAMESPACE=${podK8sNamespace(pod)};K8S_POD_NAME=${pod.name}`,
        CNI_PATH: '/opt/cni/bin',
      },
      netconf(state, pod, dualStack),
    );
  return execCommand(
    [
      'ip',
      'netns',
      'exec',
      `${state.prefix}${pod.node}`,
      'env',
      `CNI_COMMAND=${command}`,
      `CNI_CONTAINERID=${pod.containerId}`,
      `CNI_NETNS=/var/run/netns/${pod.namespace}`,
      'CNI_IFNAME=eth0',
      `CNI_ARGS=K8S_POD_NAMESPACE=${podK8sNamespace(pod)};K8S_POD_NAME=${pod.name}`,
      'CNI_PATH=/opt/cni/bin',
      // A lab's nodes share one file system: the plugin's per-node store record stays in the lab's folder.
      `PODROUTE_CNI_STATE_DIR=${join(state.dir, 'cni')}`,
      process.execPath,
      join(packageRoot(), 'bin/podroute-cni.js'),
    ],
    { input: netconf(state, pod, dualStack), timeoutMs: 60_000 },
  );
}

/** Creates pod `name` on `node`; returns it with its address. */
export async function podAdd(state: LabState, node: string, name: string, options: PodOptions = {}): Promise<LabPod> {
  if (!DNS_LABEL.test(name) || name.length > 40)
    throw new Error(`pod name ${JSON.stringify(name)}: lowercase letters, digits and "-" (at most 40)`);
  const k8sNamespace = options.namespace ?? DEFAULT_NAMESPACE;
  if (!DNS_LABEL.test(k8sNamespace) || k8sNamespace.length > 63)
    throw new Error(`namespace ${JSON.stringify(k8sNamespace)}: lowercase letters, digits and "-" (at most 63)`);
  if (!state.namespaces.some((n) => n.node === node))
    throw new Error(`node ${JSON.stringify(node)} is not in lab ${state.name} (nodes: ${state.namespaces.map((n) => n.node).join(', ')})`);
  if (!runsAgent(state, node)) throw new Error(`node ${node} runs no podroute agent: pods go on podroute nodes`);
  const ref = podRef({ name, k8sNamespace });
  if (state.pods.some((p) => podRef(p) === ref)) throw new Error(`pod ${ref} already exists in lab ${state.name}`);
  const default_ = k8sNamespace === DEFAULT_NAMESPACE;
  const pod: LabPod = {
    name,
    node,
    namespace: podNamespace(state, name, k8sNamespace),
    containerId: default_ ? `clab-${state.name}-${name}` : `clab-${state.name}-${k8sNamespace}.${name}`,
    ...(default_ ? {} : { k8sNamespace }),
    ...(options.labels && Object.keys(options.labels).length > 0 ? { labels: { ...options.labels } } : {}),
    ...(options.ports && options.ports.length > 0 ? { ports: options.ports } : {}),
  };
  if ((await listNetns()).has(pod.namespace)) throw new Error(`namespace ${pod.namespace} already exists and is not this lab's`);
  // As in Kubernetes, a pod's namespace exists before the pod; one made here has only its name label.
  const dualStack = await labDatastore(state, async (ds) => {
    if (!(await ds.get('Namespace', k8sNamespace)))
      await ds.create(namespaceResource(k8sNamespace, {})).catch((e: unknown) => {
        if (!(e instanceof AlreadyExistsError)) throw e;
      });
    return (await ds.get('Node', node))?.spec.bgp?.ipv6Address !== undefined;
  });
  // Recorded first: whatever happens next, `down` deletes the namespace.
  state.pods.push(pod);
  writeState(state);
  await run(['ip', 'netns', 'add', pod.namespace]);
  await run(['ip', '-n', pod.namespace, 'link', 'set', 'lo', 'up']);
  const r = await callCni(state, pod, 'ADD', dualStack);
  if (r.code !== 0) {
    await run(['ip', 'netns', 'del', pod.namespace]).catch(() => undefined);
    state.pods = state.pods.filter((p) => p !== pod);
    writeState(state);
    throw new Error(`podroute-cni ADD for ${ref} on ${node} failed: ${r.stdout.trim() || r.stderr.trim()}`);
  }
  const result = JSON.parse(r.stdout) as { ips: { address: string }[] };
  const addresses = result.ips.map((i) => cidrAddress(i.address, 'ips[].address'));
  pod.ip = addresses.find((a) => !a.includes(':'));
  const ip6 = addresses.find((a) => a.includes(':'));
  if (ip6 !== undefined) pod.ip6 = ip6;
  writeState(state);
  return pod;
}

/** Removes a pod through CNI DEL (idempotent) and deletes its namespace. */
export async function podDel(state: LabState, ref: string, namespace?: string): Promise<void> {
  const pod = mustPod(state, ref, namespace);
  const r = await callCni(state, pod, 'DEL');
  if (r.code !== 0) throw new Error(`podroute-cni DEL for ${podRef(pod)} failed: ${r.stdout.trim() || r.stderr.trim()}`);
  if ((await listNetns()).has(pod.namespace)) await run(['ip', 'netns', 'del', pod.namespace]);
  state.pods = state.pods.filter((p) => p !== pod);
  writeState(state);
}

async function labDatastore<T>(state: LabState, use: (ds: BackendDatastore) => Promise<T>): Promise<T> {
  const config = labDatastoreConfig(state);
  if (!config) throw new Error(`lab ${state.name} has no datastore (no redis node in its topology)`);
  const ds = await openDatastore({ ...config, connectWaitMs: 5_000 });
  try {
    return await use(ds);
  } finally {
    await ds.close();
  }
}

/**
 * Relabels a pod as `kubectl label` does: `k=v` sets, `k` mapped to null removes, other labels
 * stay. Rewrites its WorkloadEndpoint's labels in the lab's datastore (Calico's own two stay
 * as they are) and remembers them for a later ADD. Returns the pod's labels.
 */
export async function podLabel(
  state: LabState,
  ref: string,
  changes: Readonly<Record<string, string | null>>,
  namespace?: string,
): Promise<Record<string, string>> {
  const pod = mustPod(state, ref, namespace);
  for (const k of Object.keys(changes))
    if (k === LABEL_NAMESPACE || k === LABEL_ORCHESTRATOR) throw new Error(`${k} is set by podroute-cni, not by hand`);
  return labDatastore(state, async (ds) => {
    const ns = podK8sNamespace(pod);
    const wep = (await ds.list('WorkloadEndpoint')).items.find(
      (w) => w.metadata.namespace === ns && w.spec.pod === pod.name && w.spec.node === pod.node,
    );
    if (!wep) throw new Error(`pod ${podRef(pod)} has no WorkloadEndpoint in lab ${state.name}'s datastore`);
    const labels: Record<string, string> = { ...wep.metadata.labels };
    for (const [k, v] of Object.entries(changes)) {
      if (v === null) delete labels[k];
      else labels[k] = v;
    }
    // The resourceVersion read above guards the write: a concurrent change fails it rather than being lost.
    const next: WorkloadEndpoint = { ...wep, metadata: { ...wep.metadata, labels } };
    await ds.update(next);
    const own = Object.fromEntries(Object.entries(labels).filter(([k]) => k !== LABEL_NAMESPACE && k !== LABEL_ORCHESTRATOR));
    if (Object.keys(own).length > 0) pod.labels = own;
    else delete pod.labels;
    writeState(state);
    return own;
  });
}

/** Writes the Namespace `name` with exactly these labels (plus kubernetes.io/metadata.name); returns them. */
export async function namespaceApply(
  state: LabState,
  name: string,
  labels: Readonly<Record<string, string>>,
): Promise<Record<string, string>> {
  return labDatastore(state, async (ds) => (await ds.apply(namespaceResource(name, labels))).metadata.labels ?? {});
}

const namespaceResource = (name: string, labels: Readonly<Record<string, string>>): Namespace => ({
  apiVersion: API_VERSION_K8S_CORE,
  kind: 'Namespace',
  metadata: { name, labels: { ...labels } },
  spec: {},
});

/** "k=v,k2=v2" as a label map (checked by Kubernetes' rules where it is written). */
export function parseLabels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parseLabelChanges(text, false))) out[k] = v!;
  return out;
}

/** As parseLabels, and "k-" maps k to null: remove it (kubectl label's syntax). */
export function parseLabelChanges(text: string, removals = true): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const part of text.split(',')) {
    const item = part.trim();
    if (item === '') continue;
    const eq = item.indexOf('=');
    if (eq < 0) {
      if (removals && item.endsWith('-') && item.length > 1) {
        out[item.slice(0, -1)] = null;
        continue;
      }
      throw new Error(`label ${JSON.stringify(item)}: expected key=value${removals ? ' or key- (to remove)' : ''}`);
    }
    if (eq === 0) throw new Error(`label ${JSON.stringify(item)}: the key is empty`);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

/** "name=80/TCP,dns=53/UDP" (protocol default TCP) as a pod's named ports. */
export function parsePortList(text: string): WorkloadEndpointPort[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((item) => {
      const m = /^([a-z0-9-]+)=(\d+)(?:\/(TCP|UDP|SCTP))?$/i.exec(item);
      if (!m) throw new Error(`port ${JSON.stringify(item)}: expected name=port or name=port/PROTOCOL (TCP, UDP, SCTP)`);
      return { name: m[1]!, port: Number(m[2]), protocol: (m[3]?.toUpperCase() ?? 'TCP') as WorkloadEndpointPort['protocol'] };
    });
}
