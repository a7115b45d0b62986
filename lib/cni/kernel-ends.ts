// What this host's kernel holds of its WorkloadEndpoints, for `podroute ipam check` run on a
// node: each host veth, the container it is marked as serving, and the addresses on its pod
// end. The pod end is read through its namespace's name (`ip netns`, where runtimes such as
// containerd keep them): a handful of `ip` runs whatever the number of pods.
import { hostname } from 'node:os';
import type { KernelEnd } from '../ipam/index.js';
import type { WorkloadEndpoint } from '../resources/index.js';
import { CONTAINER_ID_ANNOTATION } from '../resources/index.js';
import { addressesIn, hostLinks, namedNetnsIds, ownedBy } from './veth.js';

/** The host end of each endpoint's interface that this namespace has, by interface name. */
export async function readKernelEnds(weps: readonly WorkloadEndpoint[]): Promise<Map<string, KernelEnd>> {
  const links = await hostLinks();
  const wanted = weps.filter((w) => links.has(w.spec.interfaceName));
  const needPeers = wanted.some((w) => links.get(w.spec.interfaceName)!.peer);
  const names = needPeers ? await namedNetnsIds() : new Map<number, string>();
  const inNetns = new Map<string, Promise<Map<number, string[]>>>();
  const out = new Map<string, KernelEnd>();
  for (const w of wanted) {
    const link = links.get(w.spec.interfaceName)!;
    const container = w.metadata.annotations?.[CONTAINER_ID_ANNOTATION] ?? w.spec.workload;
    const end: KernelEnd = {};
    // The mark holds at most what an alias can; the endpoint's own container is named in full.
    if (link.owner !== undefined) end.owner = container !== undefined && ownedBy(link, container) ? container : link.owner;
    const netns = link.peer ? names.get(link.peer.netnsid) : undefined;
    if (link.peer && netns !== undefined) {
      if (!inNetns.has(netns)) inNetns.set(netns, addressesIn(netns));
      const addresses = (await inNetns.get(netns)!).get(link.peer.ifindex);
      // A namespace that could be named but not read (gone meanwhile) leaves the addresses unknown.
      if (addresses !== undefined) end.podAddresses = addresses;
    }
    out.set(w.spec.interfaceName, end);
  }
  return out;
}

/**
 * Which node's endpoints `ipam check` compares with this host's kernel: the one `--node` names,
 * else this host's own name as the plugin derives it, when the store has a Node of that name
 * (a check run elsewhere compares nothing). The reason when the kernel could not be read.
 */
export async function kernelToCompare(
  flag: string | undefined,
  weps: readonly WorkloadEndpoint[],
  nodes: readonly { metadata: { name: string } }[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ node: string; ends: Map<string, KernelEnd> } | undefined> {
  const node = flag ?? env.PODROUTE_NODENAME ?? env.NODENAME ?? hostname().toLowerCase();
  if (flag === undefined && !nodes.some((n) => n.metadata.name === node)) return undefined;
  try {
    return { node, ends: await readKernelEnds(weps.filter((w) => w.spec.node === node)) };
  } catch (e) {
    throw new Error(`--node ${node}: cannot read this host's interfaces: ${(e as Error).message}`);
  }
}
