// Running the podroute-cni binary exactly as a container runtime does.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertDistCurrent } from './dist.js';
import type { Netns } from './netns.js';

const CNI = join(fileURLToPath(import.meta.url), '../../../bin/podroute-cni.js');

export interface CniCall {
  code: number;
  json: Record<string, unknown> | undefined;
  stdout: string;
  /** What the plugin logged (it is also passed on to the test's own stderr). */
  stderr: string;
  ms: number;
}

/**
 * Runs the plugin in `host` (the node's namespace) with CNI_COMMAND, `env` and `stdin`;
 * `program` is another plugin to run instead (the C shim, cni/shim/podroute-cni).
 */
export async function callCni(
  host: Netns,
  command: string,
  env: Record<string, string>,
  stdin: string,
  program: readonly string[] = ['node', CNI],
): Promise<CniCall> {
  if (program[1] === CNI) assertDistCurrent();
  const t0 = performance.now();
  // The plugin's record of the store it saw goes into the test lab's folder, removed with it.
  const all = { PODROUTE_CNI_STATE_DIR: join(host.lab.dir, 'cni'), ...env };
  const r = await host.exec(['env', `CNI_COMMAND=${command}`, ...Object.entries(all).map(([k, v]) => `${k}=${v}`), ...program], {
    input: stdin,
    timeoutMs: 30_000,
  });
  let json: Record<string, unknown> | undefined;
  try {
    json = r.stdout.trim() ? JSON.parse(r.stdout) : undefined;
  } catch {
    json = undefined;
  }
  if (r.stderr.trim()) process.stderr.write(r.stderr);
  return { code: r.code, json, stdout: r.stdout, stderr: r.stderr, ms: performance.now() - t0 };
}

/** The runtime's environment for a pod's eth0 in its own namespace (Kubernetes-style CNI_ARGS). */
export function podEnv(pod: { containerId: string; ns: Netns; name: string }, namespace = 'default'): Record<string, string> {
  return {
    CNI_CONTAINERID: pod.containerId,
    CNI_NETNS: `/var/run/netns/${pod.ns.name}`,
    CNI_IFNAME: 'eth0',
    CNI_ARGS: `K8S_POD_NAMESPACE=${namespace};K8S_POD_NAME=${pod.name}`,
  };
}
