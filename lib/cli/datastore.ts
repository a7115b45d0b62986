// The CLI face of the datastore and IPAM, as a function so main.ts can dispatch to it:
//   podroute apply -f <file.yaml|->     create or replace every resource in the file
//   podroute create -f <file>           create only (fails on existing)
//   podroute delete <kind> <name> [-n namespace]
//   podroute get <kind> [name] [-n namespace] [-o yaml|json]
//   podroute ipam show [--show-blocks]
// The datastore comes from --datastore or the environment (PODROUTE_REDIS_URL, PODROUTE_ETCD_ENDPOINTS ...); see lib/datastore/open.ts.
// It lives here, above both, because `ipam show` needs IPAM and the rest need the datastore.
import { readFileSync } from 'node:fs';
import { stringify as stringifyYaml } from 'yaml';
import {
  defaultDatastoreFile,
  openFileDatastore,
  DatastoreError,
  datastoreConfigFromEnv,
  datastoreFromFlag,
  openDatastore,
  type BackendDatastore,
} from '../datastore/index.js';
import {
  labelSelectorToCalico,
  KINDS,
  manifestKind,
  NAMESPACED_KINDS,
  resourceKey,
  type IPPool,
  type Kind,
  type Resource,
  formatResources,
  parseResources,
  toManifest,
  ValidationError,
} from '../resources/index.js';
import { checkIpam, formatIpamCheck, formatIpamRepair, formatIpamShow, Ipam, IpamError, repairIpam } from '../ipam/index.js';

export const DATASTORE_COMMANDS = ['apply', 'create', 'delete', 'get', 'ipam'] as const;

export interface CommandIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  readStdin?: () => string;
}

const USAGE = `usage:
  podroute apply -f <file|->            create or replace the resources in a YAML file
  podroute create -f <file|->           create them (fails if one exists)
  podroute delete <kind> <name> [-n namespace]
  podroute get <kind> [name] [-n namespace] [-o yaml|json]
  podroute ipam show [--show-blocks]
kinds: ippool, node, bgppeer, bgpconfiguration, felixconfiguration, ipamconfiguration, ipamblock, ipamhandle, workloadendpoint (wep),
  namespace (ns), networkpolicy (np: Calico's), globalnetworkpolicy (gnp),
  networkpolicies.networking.k8s.io (knp, netpol: Kubernetes')
namespaced kinds (workloadendpoint, networkpolicy, knp) take namespace/name, or -n; the default namespace is "default"
datastore: by default a file (PODROUTE_STATE_DIR/datastore.json; ~/.local/state/podroute/datastore.json, or
  /var/lib/podroute/datastore.json as root), else --datastore file:PATH | etcd://host:2379[,...] | redis://host:port | memory,
  or the environment (PODROUTE_DATASTORE=file with PODROUTE_DATASTORE_FILE=PATH):
  PODROUTE_REDIS_URL=redis://host:port (or PODROUTE_REDIS_SENTINELS + PODROUTE_REDIS_SENTINEL_NAME),
  PODROUTE_ETCD_ENDPOINTS=host:2379,host:2379 (PODROUTE_DATASTORE=etcd)
`;

/**
 * The file of the embedded datastore, when that is the one to use: `--datastore file:PATH`, or
 * PODROUTE_DATASTORE=file (PODROUTE_DATASTORE_FILE names it), or nothing configured at all.
 */
export function datastoreFile(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (flag !== undefined) return flag.startsWith('file:') ? flag.slice('file:'.length) || defaultDatastoreFile(env) : undefined;
  if (env.PODROUTE_DATASTORE === 'file' || (env.PODROUTE_DATASTORE === undefined && env.PODROUTE_DATASTORE_FILE))
    return env.PODROUTE_DATASTORE_FILE || defaultDatastoreFile(env);
  if (env.PODROUTE_DATASTORE !== undefined) return undefined;
  return datastoreConfigFromEnv(env).type === 'memory' ? defaultDatastoreFile(env) : undefined;
}

/** Short names, and the group-qualified names kubectl prints; plain "networkpolicy" is Calico's, as in calicoctl. */
const ALIASES: Readonly<Record<string, Kind>> = {
  ns: 'Namespace',
  np: 'NetworkPolicy',
  gnp: 'GlobalNetworkPolicy',
  knp: 'KubernetesNetworkPolicy',
  netpol: 'KubernetesNetworkPolicy',
  'networkpolicy.networking.k8s.io': 'KubernetesNetworkPolicy',
  'networkpolicies.networking.k8s.io': 'KubernetesNetworkPolicy',
  'networkpolicy.projectcalico.org': 'NetworkPolicy',
  'networkpolicies.projectcalico.org': 'NetworkPolicy',
  wep: 'WorkloadEndpoint',
  weps: 'WorkloadEndpoint',
  svc: 'Service',
  endpointslices: 'EndpointSlice',
  'endpointslices.discovery.k8s.io': 'EndpointSlice',
};

/** Kind from what a user types: ippool, ippools, IPPool, bgppeers, knp ... */
export function kindFromArg(arg: string): Kind | undefined {
  const a = arg.toLowerCase();
  if (Object.hasOwn(ALIASES, a)) return ALIASES[a];
  return KINDS.find((k) => {
    const l = k.toLowerCase();
    return a === l || a === `${l}s` || (l.endsWith('y') && a === `${l.slice(0, -1)}ies`);
  });
}

/** A namespaced kind's key: "ns/name" as given, else the -n namespace or "default". */
function keyFor(kind: Kind, name: string, namespace: string | undefined): string {
  if (!NAMESPACED_KINDS.includes(kind) || name.includes('/')) return name;
  return `${namespace ?? 'default'}/${name}`;
}

/** Runs one command; returns the exit code. `ds` overrides the datastore from the environment. */
export async function runDatastoreCommand(argv: readonly string[], io: CommandIo, ds?: BackendDatastore): Promise<number> {
  const [cmd, ...rest] = argv;
  const flag = (name: string): string | undefined => {
    const i = rest.indexOf(name);
    return i >= 0 ? rest[i + 1] : undefined;
  };
  const positional = rest.filter(
    (a, i) => !a.startsWith('-') && !(i > 0 && rest[i - 1]!.startsWith('-') && rest[i - 1] !== '--show-blocks'),
  );
  const namespace = flag('-n') ?? flag('--namespace');
  let store = ds;
  try {
    if (!cmd || !(DATASTORE_COMMANDS as readonly string[]).includes(cmd)) {
      io.stderr(USAGE);
      return 2;
    }
    let resources: Resource[] = [];
    if (cmd === 'apply' || cmd === 'create') {
      const file = flag('-f') ?? flag('--filename');
      if (!file) {
        io.stderr(`podroute ${cmd}: -f <file> is required\n`);
        return 2;
      }
      const text = file === '-' ? (io.readStdin ?? (() => readFileSync(0, 'utf8')))() : readFileSync(file, 'utf8');
      resources = parseResources(text); // validate everything before writing anything
    }
    if (!store) {
      const file = datastoreFile(flag('--datastore'));
      if (file !== undefined) store = await openFileDatastore(file);
      else {
        const given = flag('--datastore');
        store = await openDatastore(given !== undefined ? datastoreFromFlag(given) : datastoreConfigFromEnv());
      }
    }
    switch (cmd) {
      case 'apply':
      case 'create':
        // Pool rules span resources (overlaps): check the file's pools together before the first write.
        await store.checkPools(resources.filter((r): r is IPPool => r.kind === 'IPPool'));
        for (const r of resources) {
          const out = cmd === 'apply' ? await store.apply(r) : await store.create(r);
          io.stdout(
            `${cmd === 'apply' ? 'applied' : 'created'} ${kindName(out.kind)} ${resourceKey(out)} (revision ${out.metadata.resourceVersion})\n`,
          );
        }
        return 0;
      case 'delete': {
        const kind = kindFromArg(positional[0] ?? '');
        if (!kind || !positional[1]) {
          io.stderr(`podroute delete: usage: delete <kind> <name> [-n namespace] (kinds: ${KINDS.join(', ')})\n`);
          return 2;
        }
        const gone = await store.delete(kind, keyFor(kind, positional[1], namespace));
        io.stdout(`deleted ${kindName(gone.kind)} ${resourceKey(gone)}\n`);
        return 0;
      }
      case 'get': {
        const kind = kindFromArg(positional[0] ?? '');
        if (!kind) {
          io.stderr(`podroute get: unknown kind ${JSON.stringify(positional[0] ?? '')} (kinds: ${KINDS.join(', ')})\n`);
          return 2;
        }
        let items = (await store.list(kind)).items as Resource[];
        if (namespace !== undefined) items = items.filter((r) => r.metadata.namespace === namespace);
        const wanted = positional[1];
        if (wanted) items = items.filter((r) => resourceKey(r) === wanted || r.metadata.name === wanted);
        if (wanted && items.length === 0) {
          io.stderr(`podroute get: ${kindName(kind)} ${JSON.stringify(wanted)} not found\n`);
          return 1;
        }
        const o = flag('-o') ?? flag('--output');
        const one = wanted !== undefined && items.length === 1;
        if (o === 'yaml') io.stdout(formatResources(items, !one));
        else if (o === 'json')
          io.stdout(
            `${JSON.stringify(one ? toManifest(items[0]!) : { apiVersion: 'projectcalico.org/v3', kind: 'List', items: items.map(toManifest) }, null, 2)}\n`,
          );
        else if (o === 'wide') io.stdout(table(kind, items, true));
        else if (o === undefined || o === 'table') io.stdout(table(kind, items));
        else {
          io.stderr(`podroute get: -o ${JSON.stringify(o)} must be json, yaml or wide\n`);
          return 2;
        }
        return 0;
      }
      case 'ipam': {
        const o = flag('-o') ?? flag('--output');
        if (positional[0] === 'check') {
          const [blocks, weps, nodes] = await Promise.all([store.list('IPAMBlock'), store.list('WorkloadEndpoint'), store.list('Node')]);
          const report = checkIpam(blocks.items, weps.items, nodes.items);
          io.stdout(o === 'json' ? `${JSON.stringify(report, null, 2)}\n` : formatIpamCheck(report));
          return report.ok ? 0 : 1;
        }
        if (positional[0] === 'repair') {
          const report = await repairIpam(store);
          io.stdout(o === 'json' ? `${JSON.stringify(report, null, 2)}\n` : formatIpamRepair(report));
          return 0;
        }
        if (positional[0] !== 'show') {
          io.stderr('podroute ipam: usage: ipam show [--show-blocks] | ipam check [-o json] | ipam repair [-o json]\n');
          return 2;
        }
        const usage = await new Ipam(store).usage();
        // Address counts are bigints (an IPv6 pool holds more than 2^53): numbers when exact, else strings.
        const plain = JSON.parse(
          JSON.stringify(usage, (_k, v: unknown) =>
            typeof v === 'bigint' ? (v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : String(v)) : v,
          ),
        ) as unknown;
        if (o === 'json' || o === 'yaml') io.stdout(o === 'json' ? `${JSON.stringify(plain, null, 2)}\n` : stringifyYaml(plain));
        else io.stdout(formatIpamShow(usage, rest.includes('--show-blocks') || o === 'wide'));
        return 0;
      }
    }
    return 2;
  } catch (e) {
    if (e instanceof ValidationError || e instanceof DatastoreError || e instanceof IpamError) {
      io.stderr(`podroute ${cmd}: ${e.message}\n`);
      return 1;
    }
    if (e instanceof Error && 'code' in e && (e as { code?: string }).code === 'ENOENT') {
      io.stderr(`podroute ${cmd}: ${e.message}\n`);
      return 1;
    }
    throw e;
  } finally {
    if (store && store !== ds) await store.close();
  }
}

/** The kind's columns; wide adds each resource's labels, revision and creation time. */
function table(kind: Kind, items: readonly Resource[], wide = false): string {
  const rows: string[][] = [];
  for (const r of items) {
    const row = [resourceKey(r)];
    if (r.kind === 'IPPool')
      row.push(r.spec.cidr, String(r.spec.blockSize), r.spec.ipipMode, r.spec.vxlanMode, String(r.spec.disabled === true));
    else if (r.kind === 'Node') row.push(r.spec.bgp?.ipv4Address ?? '', r.spec.bgp?.ipv6Address ?? '', String(r.spec.bgp?.asNumber ?? ''));
    else if (r.kind === 'BGPPeer')
      row.push(
        r.spec.peerIP ?? `peerSelector ${r.spec.peerSelector}`,
        String(r.spec.asNumber ?? ''),
        r.spec.node ?? r.spec.nodeSelector ?? '(global)',
      );
    else if (r.kind === 'IPAMBlock') row.push(r.spec.cidr, r.spec.affinity ?? '');
    else if (r.kind === 'WorkloadEndpoint')
      row.push(r.spec.node, r.spec.interfaceName, r.spec.ipNetworks.join(','), labelText(r.metadata.labels));
    else if (r.kind === 'Namespace') row.push(labelText(r.metadata.labels));
    else if (r.kind === 'NetworkPolicy' || r.kind === 'GlobalNetworkPolicy')
      row.push(r.spec.order === undefined ? '' : String(r.spec.order), r.spec.selector || 'all()', r.spec.types.join(','));
    else if (r.kind === 'KubernetesNetworkPolicy') row.push(labelSelectorToCalico(r.spec.podSelector), r.spec.policyTypes.join(','));
    else if (r.kind === 'Service')
      row.push(
        r.spec.type ?? 'ClusterIP',
        (r.spec.clusterIPs ?? []).join(',') || '<none>',
        [...(r.spec.externalIPs ?? []), ...(r.spec.status?.loadBalancer?.ingress ?? []).map((i) => i.ip ?? i.hostname ?? '')].join(',') ||
          '<none>',
        (r.spec.ports ?? []).map((p) => `${p.port}${p.nodePort ? `:${p.nodePort}` : ''}/${p.protocol ?? 'TCP'}`).join(',') || '<none>',
      );
    else if (r.kind === 'EndpointSlice')
      row.push(
        r.spec.addressType,
        (r.spec.ports ?? []).map((p) => String(p.port ?? '')).join(',') || '<unset>',
        r.spec.endpoints.flatMap((e) => e.addresses).join(',') || '<unset>',
      );
    if (wide) row.push(labelText(r.metadata.labels) || '-', String(r.metadata.resourceVersion ?? ''), r.metadata.creationTimestamp ?? '');
    rows.push(row);
  }
  const head: Record<string, string[]> = {
    IPPool: ['NAME', 'CIDR', 'BLOCKSIZE', 'IPIPMODE', 'VXLANMODE', 'DISABLED'],
    Node: ['NAME', 'IPV4', 'IPV6', 'ASN'],
    BGPPeer: ['NAME', 'PEERIP', 'ASN', 'NODE'],
    IPAMBlock: ['NAME', 'CIDR', 'AFFINITY'],
    WorkloadEndpoint: ['NAME', 'NODE', 'INTERFACE', 'NETWORKS', 'LABELS'],
    Namespace: ['NAME', 'LABELS'],
    NetworkPolicy: ['NAME', 'ORDER', 'SELECTOR', 'TYPES'],
    GlobalNetworkPolicy: ['NAME', 'ORDER', 'SELECTOR', 'TYPES'],
    KubernetesNetworkPolicy: ['NAME', 'POD-SELECTOR', 'POLICY-TYPES'],
    Service: ['NAME', 'TYPE', 'CLUSTER-IP', 'EXTERNAL-IP', 'PORTS'],
    EndpointSlice: ['NAME', 'ADDRESSTYPE', 'PORTS', 'ENDPOINTS'],
  };
  const all = [[...(head[kind] ?? ['NAME']), ...(wide ? ['LABELS', 'REVISION', 'CREATED'] : [])], ...rows];
  const w = all[0]!.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return (
    all
      .map((r) =>
        r
          .map((c, i) => c.padEnd(w[i]!))
          .join('   ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

const labelText = (labels: Readonly<Record<string, string>> | undefined): string =>
  Object.entries(labels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',');

/** How messages name a kind: Kubernetes' NetworkPolicy by its group, so it is not taken for Calico's. */
function kindName(kind: Kind): string {
  return kind === 'KubernetesNetworkPolicy' ? 'NetworkPolicy.networking.k8s.io' : manifestKind(kind);
}
