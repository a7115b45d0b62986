// The CNI commands. ADD: addresses from IPAM (one per family the netconf asks for, all under
// one handle, the container ID), veth, WorkloadEndpoint; each step is undone if a later one
// fails, so a failed ADD leaves nothing behind (an IPv6 pool that is exhausted frees the IPv4
// address already taken). DEL undoes
// all of it and succeeds when there is nothing left to undo. CHECK compares what is there
// with what ADD made.
//
// A call acts on what its container ID owns: the WorkloadEndpoint annotated with it, the IPAM
// handle named by it, the veth marked with it. Kubernetes recreates a pod's sandbox with an ADD
// for the new one before the DEL for the old; both want the pod's endpoint name and veth name.
// As in Calico, the new sandbox's ADD takes them over (the old veth goes, the endpoint is
// rewritten; here the old sandbox's addresses are freed too, since its veth is gone), and the old
// sandbox's DEL and CHECK leave them alone and say so.
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import {
  openDatastore,
  DatastoreUnavailableError,
  NotFoundError,
  type BackendDatastore,
  type DatastoreConfig,
} from '../datastore/index.js';
import {
  CONTAINER_ID_ANNOTATION,
  API_VERSION,
  LABEL_NAMESPACE,
  LABEL_ORCHESTRATOR,
  type IPPool,
  type WorkloadEndpoint,
} from '../resources/index.js';
import { fileIdentityRecord, Ipam, IpamError } from '../ipam/index.js';
import { identityRecordPath } from './store-record.js';
import { datastoreConfig, SUPPORTED_VERSIONS, type CniEnv, type CniResult, type NetConf } from './config.js';
import { atLeast, resultFor } from './cni-version.js';
import { CNI_CODES, CniError } from './errors.js';
import { poolsForFamily } from './pools.js';
import { podMtu } from './mtu.js';
import { silent, type Say } from './notes.js';
import {
  createVeth,
  deleteLink,
  deletePodEnd,
  gatewayFor,
  hostLink,
  hostVethName,
  ownedBy,
  podAddresses,
  podDefaultRoute,
} from './veth.js';

export interface Workload {
  node: string;
  namespace: string;
  pod: string;
  /** The WorkloadEndpoint's name. */
  name: string;
  hostIf: string;
}

function dnsLabel(s: string): string {
  return (
    s
      .toLowerCase()
      .replace(/[^a-z0-9.-]/g, '-')
      .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '') || 'x'
  );
}

/** Names for a container, as Calico derives them (namespace.pod when Kubernetes says, else the container ID). */
export function workloadFor(env: CniEnv, node: string): Workload {
  const k8sNs = env.args.K8S_POD_NAMESPACE;
  const k8sPod = env.args.K8S_POD_NAME;
  const namespace = dnsLabel(k8sNs || 'default');
  const pod = k8sPod ? dnsLabel(k8sPod) : `cni-${dnsLabel(env.containerId).slice(0, 12)}`;
  const identity = k8sNs && k8sPod ? `${k8sNs}.${k8sPod}` : env.containerId;
  const name = `${dnsLabel(node)}-${k8sPod ? 'k8s' : 'cni'}-${pod}-${dnsLabel(env.ifname)}`.slice(0, 253);
  return { node, namespace, pod, name, hostIf: hostVethName(identity) };
}

/**
 * The pod's labels from args.cni.labels, and the two Calico adds, which win over the pod's own
 * as in Calico: policies find a pod's namespace and orchestrator there.
 */
export function workloadLabels(conf: NetConf, namespace: string, orchestrator: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const l of conf.args?.cni?.labels ?? []) labels[l.key] = l.value;
  labels[LABEL_NAMESPACE] = namespace;
  labels[LABEL_ORCHESTRATOR] = orchestrator;
  return labels;
}

export function nodeName(conf: NetConf, env: NodeJS.ProcessEnv): string {
  return conf.nodename ?? env.PODROUTE_NODENAME ?? env.NODENAME ?? hostname();
}

/**
 * How a call gets its datastore: a client of its own by default, closed when the call ends; the
 * node agent, which runs calls for the CNI shim, lends a warm one whose close() leaves it open.
 */
export type StoreOpener = (config: DatastoreConfig) => Promise<BackendDatastore>;

export async function open(conf: NetConf, env: NodeJS.ProcessEnv, openStore: StoreOpener = openDatastore): Promise<BackendDatastore> {
  try {
    return await openStore(datastoreConfig(conf, env));
  } catch (e) {
    if (e instanceof CniError) throw e;
    throw new CniError(CNI_CODES.tryAgainLater, `datastore unreachable: ${(e as Error).message}`);
  }
}

export function storeError(e: unknown, what: string): CniError {
  if (e instanceof CniError) return e;
  if (e instanceof IpamError) {
    if (e.code === 'StoreReplaced') return new CniError(CNI_CODES.storeReplaced, `${what}: ${e.message}`);
    return e.code === 'Exhausted' || e.code === 'NoPool'
      ? new CniError(CNI_CODES.noAddresses, `${what}: ${e.message}`)
      : new CniError(CNI_CODES.invalidConfig, `${what}: ${e.message}`);
  }
  if (e instanceof DatastoreUnavailableError) return new CniError(CNI_CODES.tryAgainLater, `${what}: ${e.message}`);
  return new CniError(CNI_CODES.internal, `${what}: ${(e as Error).message}`);
}

/** The families an ADD assigns, IPv4 first as Calico lists them: assign_ipv4 defaults to true, assign_ipv6 to false. */
export function requestedFamilies(conf: NetConf): (4 | 6)[] {
  const out: (4 | 6)[] = [];
  if (conf.ipam?.assignIpv4 ?? true) out.push(4);
  if (conf.ipam?.assignIpv6) out.push(6);
  return out;
}

export async function cmdAdd(
  conf: NetConf,
  env: CniEnv,
  procEnv: NodeJS.ProcessEnv = process.env,
  openStore?: StoreOpener,
  say: Say = silent,
): Promise<CniResult> {
  if (!existsSync(env.netns)) throw new CniError(CNI_CODES.unknownContainer, `CNI_NETNS: ${env.netns} does not exist`);
  const node = nodeName(conf, procEnv);
  const w = workloadFor(env, node);
  const ds = await open(conf, procEnv, openStore);
  const undo: (() => Promise<unknown>)[] = [];
  try {
    const ipam = new Ipam(ds, { identity: fileIdentityRecord(identityRecordPath(datastoreConfig(conf, procEnv), node, procEnv)) });
    const [existing, podEndpoint] = await Promise.all([hostLink(w.hostIf), ds.get('WorkloadEndpoint', `${w.namespace}/${w.name}`)]);
    // Only a Kubernetes pod's endpoint name is the pod's own; another's is an older sandbox of it.
    const heldBy = podEndpoint?.metadata.annotations?.[CONTAINER_ID_ANNOTATION];
    const older = env.args.K8S_POD_NAME && heldBy !== undefined && heldBy !== env.containerId ? heldBy : undefined;
    // A repeated ADD for the same container starts over rather than holding two addresses; an
    // older sandbox's veth makes way for this one's.
    if (existing) {
      await deleteLink(w.hostIf);
      const owner = ownedBy(existing, env.containerId) === false ? existing.owner : existing.owner === undefined ? older : undefined;
      if (owner !== undefined)
        say({
          action: 'replaced',
          what: `host veth ${w.hostIf}`,
          why: `it was container ${owner}'s, an older sandbox of ${w.namespace}/${w.pod}; its pod end went with it`,
        });
    }
    await ipam.releaseByHandle(env.containerId).catch(() => undefined);
    const families = requestedFamilies(conf);
    const cidrs: string[] = [];
    let mtu = conf.mtu;
    try {
      const pools = (await ds.list('IPPool')).items;
      const used: IPPool[] = [];
      // One family after the other: both under the one handle, so one release frees both.
      for (const family of families) {
        const assigned = await ipam.autoAssign({
          handle: env.containerId,
          node,
          family,
          pools: poolsForFamily(conf.ipam, family, pools),
          attrs: { namespace: w.namespace, pod: w.pod, containerID: env.containerId },
        });
        cidrs.push(assigned.cidr);
        const pool = pools.find((p) => p.metadata.name === assigned.pool);
        if (pool) used.push(pool);
      }
      // WireGuard's MTU is in FelixConfiguration: read whenever the netconf names none.
      if (mtu === undefined) mtu = podMtu(used, (await ds.list('FelixConfiguration')).items, node);
    } catch (e) {
      // "May or may not have been applied": release by handle (idempotent) so nothing leaks.
      await ipam.releaseByHandle(env.containerId).catch(() => undefined);
      throw storeError(e, 'IPAM');
    }
    undo.push(() => ipam.releaseByHandle(env.containerId));
    let macs: Awaited<ReturnType<typeof createVeth>>;
    try {
      macs = await createVeth({
        host: w.hostIf,
        podIf: env.ifname,
        netns: env.netns,
        addresses: cidrs,
        mtu,
        owner: env.containerId,
      });
    } catch (e) {
      throw new CniError(CNI_CODES.ioFailure, `veth: ${(e as Error).message}`);
    }
    undo.push(() => deleteLink(w.hostIf));
    const orchestrator = env.args.K8S_POD_NAME ? 'k8s' : 'cni';
    const wep: WorkloadEndpoint = {
      apiVersion: API_VERSION,
      kind: 'WorkloadEndpoint',
      metadata: {
        name: w.name,
        namespace: w.namespace,
        labels: workloadLabels(conf, w.namespace, orchestrator),
        annotations: { [CONTAINER_ID_ANNOTATION]: env.containerId },
      },
      spec: {
        orchestrator,
        workload: env.containerId,
        node,
        pod: w.pod,
        endpoint: env.ifname,
        interfaceName: w.hostIf,
        mac: macs.podMac || undefined,
        ipNetworks: cidrs,
        ...(conf.args?.cni?.ports?.length ? { ports: conf.args.cni.ports } : {}),
      },
    };
    try {
      await ds.apply(wep);
    } catch (e) {
      throw storeError(e, 'WorkloadEndpoint');
    }
    if (older !== undefined && podEndpoint) await replaced(ipam, podEndpoint, older, w, say);
    return resultFor(conf.cniVersion, {
      cniVersion: conf.cniVersion,
      interfaces: [
        { name: w.hostIf, mac: macs.hostMac },
        { name: env.ifname, mac: macs.podMac, sandbox: env.netns },
      ],
      ips: cidrs.map((address) => ({ address, gateway: gatewayFor(address), interface: 1 })),
      routes: cidrs.map((address) => ({ dst: address.includes(':') ? '::/0' : '0.0.0.0/0', gw: gatewayFor(address) })),
      dns: {},
    });
  } catch (e) {
    for (const step of undo.reverse()) await step().catch(() => undefined);
    throw storeError(e, 'ADD');
  } finally {
    await ds.close().catch(() => undefined);
  }
}

/**
 * The older sandbox's endpoint was rewritten for this one: its addresses go too when its veth went
 * (the one this ADD replaced); under another name, its veth may still carry them, so they are left
 * to its DEL.
 */
async function replaced(ipam: Ipam, old: WorkloadEndpoint, container: string, w: Workload, say: Say): Promise<void> {
  const what = `WorkloadEndpoint ${old.metadata.namespace}/${old.metadata.name}`;
  if (
    old.spec.interfaceName === w.hostIf &&
    (await ipam.releaseByHandle(container).then(
      () => true,
      () => false,
    ))
  )
    return say({
      action: 'replaced',
      what,
      why: `it was container ${container}'s, an older sandbox of ${w.namespace}/${w.pod}; its addresses ${old.spec.ipNetworks.join(', ') || '(none)'} are released`,
    });
  say({
    action: 'replaced',
    what,
    why: `it was container ${container}'s, an older sandbox of ${w.namespace}/${w.pod}; its addresses are left to its DEL`,
  });
}

/** The endpoint of this container, and the pod's endpoint when another container holds it. */
async function endpoints(
  ds: BackendDatastore,
  w: Workload,
  containerId: string,
): Promise<{ mine?: WorkloadEndpoint; other?: { wep: WorkloadEndpoint; container: string } }> {
  const direct = await ds.get('WorkloadEndpoint', `${w.namespace}/${w.name}`);
  const holder = direct?.metadata.annotations?.[CONTAINER_ID_ANNOTATION];
  if (direct && holder === containerId) return { mine: direct };
  // CNI_ARGS may differ between ADD and DEL: look for the container ID itself.
  const mine = (await ds.list('WorkloadEndpoint')).items.find((x) => x.metadata.annotations?.[CONTAINER_ID_ANNOTATION] === containerId);
  return { mine, ...(direct && holder !== undefined ? { other: { wep: direct, container: holder } } : {}) };
}

const endpointName = (wep: WorkloadEndpoint): string => `${wep.metadata.namespace}/${wep.metadata.name}`;

export async function cmdDel(
  conf: NetConf,
  env: CniEnv,
  procEnv: NodeJS.ProcessEnv = process.env,
  openStore?: StoreOpener,
  say: Say = silent,
): Promise<void> {
  const node = nodeName(conf, procEnv);
  const w = workloadFor(env, node);
  const ds = await open(conf, procEnv, openStore);
  try {
    const { mine, other } = await endpoints(ds, w, env.containerId);
    if (mine)
      await ds.delete('WorkloadEndpoint', endpointName(mine)).catch((e) => {
        if (!(e instanceof NotFoundError)) throw e;
      });
    if (other)
      say({
        action: 'left',
        what: `WorkloadEndpoint ${endpointName(other.wep)}`,
        why: `it is container ${other.container}'s, another sandbox of ${w.namespace}/${w.pod}`,
      });
    // Through the sandbox's own namespace, the pair goes whatever its host end is called, and
    // nothing of another sandbox can. Without it (the runtime removed it, which takes the pair
    // too, or never says), the host end goes only if it is this container's.
    const viaPod = env.netns !== '' && existsSync(env.netns) && (await deletePodEnd(env.netns, env.ifname));
    const names = [...new Set([mine?.spec.interfaceName, w.hostIf].filter((n): n is string => !!n))];
    for (const name of viaPod ? [] : names) await deleteOwnVeth(name, env.containerId, other, say);
    if (viaPod && other?.wep.spec.interfaceName && names.includes(other.wep.spec.interfaceName))
      say({
        action: 'left',
        what: `host veth ${other.wep.spec.interfaceName}`,
        why: `it is container ${other.container}'s, another sandbox of ${w.namespace}/${w.pod}`,
      });
    await new Ipam(ds).releaseByHandle(env.containerId);
  } catch (e) {
    throw storeError(e, 'DEL');
  } finally {
    await ds.close().catch(() => undefined);
  }
}

export async function cmdCheck(
  conf: NetConf,
  env: CniEnv,
  procEnv: NodeJS.ProcessEnv = process.env,
  openStore?: StoreOpener,
): Promise<void> {
  if (!atLeast(conf.cniVersion, '0.4.0'))
    throw new CniError(CNI_CODES.incompatibleVersion, `CHECK is not part of CNI ${conf.cniVersion}`, 'CHECK exists from CNI 0.4.0');
  if (!existsSync(env.netns)) throw new CniError(CNI_CODES.unknownContainer, `CNI_NETNS: ${env.netns} does not exist`);
  const node = nodeName(conf, procEnv);
  const w = workloadFor(env, node);
  const ds = await open(conf, procEnv, openStore);
  try {
    const { mine: wep, other } = await endpoints(ds, w, env.containerId);
    if (!wep)
      throw new CniError(
        CNI_CODES.checkFailed,
        `no WorkloadEndpoint for container ${env.containerId}` +
          (other
            ? `: ${w.namespace}/${w.pod}'s endpoint ${endpointName(other.wep)} is container ${other.container}'s, another sandbox`
            : ''),
      );
    const want = wep.spec.ipNetworks;
    const prev = conf.prevResult?.ips?.map((i) => i.address);
    if (prev && prev.join() !== want.join())
      throw new CniError(
        CNI_CODES.checkFailed,
        `prevResult addresses ${prev.join(', ')} differ from the WorkloadEndpoint's ${want.join(', ')}`,
      );
    const link = await hostLink(wep.spec.interfaceName);
    if (!link) throw new CniError(CNI_CODES.checkFailed, `host interface ${wep.spec.interfaceName} is missing`);
    if (ownedBy(link, env.containerId) === false)
      throw new CniError(
        CNI_CODES.checkFailed,
        `host interface ${wep.spec.interfaceName} is container ${link.owner}'s, not ${env.containerId}'s`,
      );
    const have = await podAddresses(env.netns, env.ifname);
    for (const a of want)
      if (!have.includes(a))
        throw new CniError(CNI_CODES.checkFailed, `${env.ifname} in ${env.netns} lacks ${a} (has ${have.join(', ') || 'none'})`);
    for (const family of [4, 6] as const) {
      const a = want.find((x) => x.includes(':') === (family === 6));
      if (!a) continue;
      const def = await podDefaultRoute(env.netns, family);
      if (!def.includes(`via ${gatewayFor(a)}`))
        throw new CniError(CNI_CODES.checkFailed, `IPv${family} default route in the pod is "${def}", not via ${gatewayFor(a)}`);
    }
  } catch (e) {
    throw storeError(e, 'CHECK');
  } finally {
    await ds.close().catch(() => undefined);
  }
}

/**
 * Deletes the host end `name` if it is this container's: marked with its ID, or unmarked (made
 * before owners were marked) and named by no other container's endpoint. Else leaves it, saying whose it is.
 */
export async function deleteOwnVeth(
  name: string,
  containerId: string,
  other: { wep: WorkloadEndpoint; container: string } | undefined,
  say: Say,
): Promise<void> {
  const link = await hostLink(name);
  if (!link) return;
  const own = ownedBy(link, containerId);
  const holder = own === false ? link.owner : own === undefined && other?.wep.spec.interfaceName === name ? other.container : undefined;
  if (holder === undefined) {
    await deleteLink(name);
    return;
  }
  say({
    action: 'left',
    what: `host veth ${name}`,
    why: `it is container ${holder}'s${own === undefined ? ' by its WorkloadEndpoint (the veth has no owner mark)' : ''}, not ${containerId}'s`,
  });
}

export function cmdVersion(cniVersion = '1.0.0'): Record<string, unknown> {
  return { cniVersion, supportedVersions: [...SUPPORTED_VERSIONS] };
}
