// Pods inside a lab: a namespace per pod, wired to its node by running the podroute-cni
// plugin in the node's namespace exactly as a container runtime would.
import { join } from 'node:path';
import { packageRoot } from './runner.js';
import { writeState, type LabPod, type LabState } from './state.js';
import { execCommand, listNetns, run } from './system.js';

export const podNamespace = (state: Pick<LabState, 'prefix'>, pod: string) => `${state.prefix}pod-${pod}`;

function netconf(state: LabState, node: string): string {
  return JSON.stringify({
    cniVersion: '1.0.0',
    name: 'k8s-pod-network',
    type: 'podroute-cni',
    nodename: node,
    datastore: { type: 'redis', url: state.redisSocket },
  });
}

async function callCni(state: LabState, pod: LabPod, command: 'ADD' | 'DEL'): Promise<{ code: number; stdout: string; stderr: string }> {
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
      `CNI_ARGS=K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod.name}`,
      'CNI_PATH=/opt/cni/bin',
      process.execPath,
      join(packageRoot(), 'bin/podroute-cni.js'),
    ],
    { input: netconf(state, pod.node), timeoutMs: 60_000 },
  );
}

/** Creates pod `name` on `node`; returns it with its address. */
export async function podAdd(state: LabState, node: string, name: string): Promise<LabPod> {
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(name) || name.length > 40)
    throw new Error(`pod name ${JSON.stringify(name)}: lowercase letters, digits and "-" (at most 40)`);
  if (!state.namespaces.some((n) => n.node === node))
    throw new Error(`node ${JSON.stringify(node)} is not in lab ${state.name} (nodes: ${state.namespaces.map((n) => n.node).join(', ')})`);
  if (!state.processes.some((p) => p.node === node && p.what === 'agent'))
    throw new Error(`node ${node} runs no podroute agent: pods go on podroute nodes`);
  if (state.pods.some((p) => p.name === name)) throw new Error(`pod ${name} already exists in lab ${state.name}`);
  const pod: LabPod = { name, node, namespace: podNamespace(state, name), containerId: `clab-${state.name}-${name}` };
  if ((await listNetns()).has(pod.namespace)) throw new Error(`namespace ${pod.namespace} already exists and is not this lab's`);
  // Recorded first: whatever happens next, `down` deletes the namespace.
  state.pods.push(pod);
  writeState(state);
  await run(['ip', 'netns', 'add', pod.namespace]);
  await run(['ip', '-n', pod.namespace, 'link', 'set', 'lo', 'up']);
  const r = await callCni(state, pod, 'ADD');
  if (r.code !== 0) {
    await run(['ip', 'netns', 'del', pod.namespace]).catch(() => undefined);
    state.pods = state.pods.filter((p) => p !== pod);
    writeState(state);
    throw new Error(`podroute-cni ADD for ${name} on ${node} failed: ${r.stdout.trim() || r.stderr.trim()}`);
  }
  const result = JSON.parse(r.stdout) as { ips: { address: string }[] };
  pod.ip = result.ips[0]?.address.split('/')[0];
  writeState(state);
  return pod;
}

/** Removes a pod through CNI DEL (idempotent) and deletes its namespace. */
export async function podDel(state: LabState, name: string): Promise<void> {
  const pod = state.pods.find((p) => p.name === name);
  if (!pod) throw new Error(`pod ${JSON.stringify(name)} is not in lab ${state.name}`);
  const r = await callCni(state, pod, 'DEL');
  if (r.code !== 0) throw new Error(`podroute-cni DEL for ${name} failed: ${r.stdout.trim() || r.stderr.trim()}`);
  if ((await listNetns()).has(pod.namespace)) await run(['ip', 'netns', 'del', pod.namespace]);
  state.pods = state.pods.filter((p) => p !== pod);
  writeState(state);
}
