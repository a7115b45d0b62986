// `podroute apply|create|get|delete|ipam`: the datastore and IPAM from the command line, as
// calicoctl reads and writes them. The commands' flags are declared here, read by the one parser
// (args.ts); the handlers get the values. It lives above both the datastore and IPAM because
// `ipam show` needs the one and every command the other.
import { readFileSync } from 'node:fs';
import { stringify as stringifyYaml } from 'yaml';
import {
  defaultDatastoreFile,
  openFileDatastore,
  DatastoreError,
  datastoreConfigFromEnv,
  datastoreFromFlag,
  NotFoundError,
  openDatastore,
  type BackendDatastore,
} from '../datastore/index.js';
import {
  labelSelectorToCalico,
  KINDS,
  manifestKind,
  NAMESPACED_KINDS,
  resourceKey,
  type AdminNetworkPolicySubject,
  type IPPool,
  type Kind,
  type Resource,
  type Tier,
  formatResources,
  parseResources,
  toManifest,
  ValidationError,
  redactSecrets,
  DRAIN_ANNOTATION,
} from '../resources/index.js';
import { checkIpam, formatIpamCheck, formatIpamRepair, formatIpamShow, Ipam, IpamError, repairIpam } from '../ipam/index.js';
import { kernelToCompare } from '../cni/kernel-ends.js';
import { checkServicesBeforeWrite } from '../services/admission.js';
import { dispatch, UsageError, type CommandSpec, type Parsed } from './args.js';
import { fileStoreWarning, LAB_FLAG, labDatastoreFlag } from './datastore-lab.js';
import { DATASTORE_FLAG, NAMESPACE_FLAG } from './flags.js';
import { OUTPUT, outputOf } from './output.js';
import { checkPolicyTiers, checkTierDeletable, withFixedTiers } from './tiers.js';

export const DATASTORE_COMMANDS = ['apply', 'create', 'delete', 'get', 'ipam'] as const;

export interface CommandIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  readStdin?: () => string;
}

const DATASTORE_TEXT = `datastore: by default a file (PODROUTE_STATE_DIR/datastore.json; ~/.local/state/podroute/datastore.json, or
  /var/lib/podroute/datastore.json as root), else --datastore, or the environment (PODROUTE_DATASTORE=file with
  PODROUTE_DATASTORE_FILE=PATH; PODROUTE_REDIS_URL=redis://host:port, or PODROUTE_REDIS_SENTINELS and
  PODROUTE_REDIS_SENTINEL_NAME; PODROUTE_ETCD_ENDPOINTS=host:2379,host:2379 with PODROUTE_DATASTORE=etcd)`;

const KINDS_TEXT = `kinds: ippool, node, bgppeer, bgpfilter, bgpconfiguration, felixconfiguration, ipamconfiguration, ipamblock, ipamhandle,
  workloadendpoint (wep), namespace (ns), tier, networkpolicy (np: Calico's), globalnetworkpolicy (gnp),
  networkpolicies.networking.k8s.io (knp, netpol: Kubernetes'), adminnetworkpolicy (anp), baselineadminnetworkpolicy (banp),
  stagednetworkpolicy (snp), stagedglobalnetworkpolicy (sgnp), stagedkubernetesnetworkpolicy (sknp), service (svc), endpointslice
namespaced kinds (workloadendpoint, networkpolicy, knp, snp, sknp) take namespace/name, or -n; the default namespace is "default"`;

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
  anp: 'AdminNetworkPolicy',
  'adminnetworkpolicies.policy.networking.k8s.io': 'AdminNetworkPolicy',
  banp: 'BaselineAdminNetworkPolicy',
  'baselineadminnetworkpolicies.policy.networking.k8s.io': 'BaselineAdminNetworkPolicy',
  wep: 'WorkloadEndpoint',
  weps: 'WorkloadEndpoint',
  svc: 'Service',
  endpointslices: 'EndpointSlice',
  'endpointslices.discovery.k8s.io': 'EndpointSlice',
  snp: 'StagedNetworkPolicy',
  sgnp: 'StagedGlobalNetworkPolicy',
  sknp: 'StagedKubernetesNetworkPolicy',
  'bgpfilters.projectcalico.org': 'BGPFilter',
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

/** The datastore --lab, --datastore (or the environment) names; `ds`, when given, instead (tests, embedding). */
async function openStore(values: Parsed['values'], ds: BackendDatastore | undefined): Promise<BackendDatastore> {
  if (ds) return ds;
  const given =
    typeof values.lab === 'string'
      ? labDatastoreFlag(values.lab, values.datastore)
      : typeof values.datastore === 'string'
        ? values.datastore
        : undefined;
  const file = datastoreFile(given);
  if (file !== undefined) return openFileDatastore(file);
  return openDatastore(given !== undefined ? datastoreFromFlag(given) : datastoreConfigFromEnv());
}

/** A write to the file datastore that nothing named (no --lab, no --datastore) while a lab is up: warn. */
function warnFileStore(cmd: string, p: Parsed, ds: BackendDatastore | undefined, io: CommandIo): void {
  if (ds || p.values.lab !== undefined || p.values.datastore !== undefined) return;
  const file = datastoreFile(undefined);
  const warning = file === undefined ? undefined : fileStoreWarning(cmd, file);
  if (warning) io.stderr(warning);
}

/** The kind a name may have been meant under: Calico's NetworkPolicy and Kubernetes' share the word. */
const OTHER_KIND: Partial<Record<Kind, { kind: Kind; arg: string }>> = {
  NetworkPolicy: { kind: 'KubernetesNetworkPolicy', arg: 'networkpolicy.networking.k8s.io' },
  KubernetesNetworkPolicy: { kind: 'NetworkPolicy', arg: 'networkpolicy' },
};

/** "NetworkPolicy shop/db does not exist", and where it does when that is under the other kind. */
async function notFound(cmd: string, store: BackendDatastore, kind: Kind, key: string): Promise<string> {
  const base = `${kindName(kind)} ${JSON.stringify(key)} does not exist`;
  const other = OTHER_KIND[kind];
  if (!other || (await store.get(other.kind, key)) === undefined) return base;
  const what =
    other.kind === 'KubernetesNetworkPolicy'
      ? 'a Kubernetes NetworkPolicy (networking.k8s.io)'
      : 'a Calico NetworkPolicy (projectcalico.org)';
  const alias = other.kind === 'KubernetesNetworkPolicy' ? 'knp' : 'np';
  return `${base}; ${what} ${key} does: podroute ${cmd} ${other.arg} ${key} (or ${alias})`;
}

/**
 * Runs a handler on the store and answers the datastore's own refusals (a resource that is not
 * valid, not found, a pool that overlaps, a file missing) with exit 1 and the reason.
 */
function withStore(
  cmd: string,
  io: CommandIo,
  ds: BackendDatastore | undefined,
  work: (p: Parsed, open: () => Promise<BackendDatastore>) => Promise<number>,
): (p: Parsed) => Promise<number> {
  return async (p) => {
    let store: BackendDatastore | undefined;
    try {
      return await work(p, async () => (store = await openStore(p.values, ds)));
    } catch (e) {
      if (
        e instanceof ValidationError ||
        e instanceof DatastoreError ||
        e instanceof IpamError ||
        (e instanceof Error && 'code' in e && (e as { code?: string }).code === 'ENOENT')
      ) {
        io.stderr(`podroute ${cmd}: ${e.message}\n`);
        return 1;
      }
      throw e;
    } finally {
      if (store && store !== ds) await store.close();
    }
  };
}

function writeCommand(name: 'apply' | 'create', summary: string, io: CommandIo, ds?: BackendDatastore): CommandSpec {
  return {
    name,
    summary,
    description: DATASTORE_TEXT,
    options: {
      filename: { type: 'string', short: 'f', value: '<file|->', help: 'the YAML (or JSON) file, - for stdin' },
      datastore: DATASTORE_FLAG,
      lab: LAB_FLAG,
    },
    run: withStore(name, io, ds, async (p, open) => {
      const file = p.values.filename;
      if (typeof file !== 'string') throw new UsageError(`${name}: -f <file> is required`);
      const text = file === '-' ? (io.readStdin ?? (() => readFileSync(0, 'utf8')))() : readFileSync(file, 'utf8');
      const resources = parseResources(text); // validate everything before writing anything
      warnFileStore(name, p, ds, io);
      const store = await open();
      // Pool rules span resources (overlaps): check the file's pools together before the first write.
      await store.checkPools(resources.filter((r): r is IPPool => r.kind === 'IPPool'));
      await checkPolicyTiers(store, resources);
      // Service addresses and ports against their ranges and the Services stored, as the API server's allocators.
      await checkServicesBeforeWrite(store, resources);
      for (const r of resources) {
        const out = name === 'apply' ? await store.apply(r) : await store.create(r);
        io.stdout(
          `${name === 'apply' ? 'applied' : 'created'} ${kindName(out.kind)} ${resourceKey(out)} (revision ${out.metadata.resourceVersion})\n`,
        );
      }
      return 0;
    }),
  };
}

function kindOf(cmd: string, arg: string | undefined): Kind {
  const kind = kindFromArg(arg ?? '');
  if (!kind)
    throw new UsageError(
      `${cmd}: ${arg === undefined ? '<kind> is required' : `unknown kind ${JSON.stringify(arg)}`} (kinds: ${KINDS.join(', ')})`,
    );
  return kind;
}

/** The commands on the datastore: apply, create, get, delete, ipam. `ds` replaces the one flags and environment name. */
export function datastoreCommands(io: CommandIo, ds?: BackendDatastore): CommandSpec[] {
  const namespaceOf = (p: Parsed) => (typeof p.values.namespace === 'string' ? p.values.namespace : undefined);
  const checkOutput = { ...OUTPUT, choices: ['json', 'table'] };
  return [
    writeCommand('apply', 'create or replace the resources of a YAML file (as calicoctl apply)', io, ds),
    writeCommand('create', 'create the resources of a YAML file (fails if one exists)', io, ds),
    {
      name: 'get',
      summary: 'read resources of a kind, or one by name',
      description: `${KINDS_TEXT}\n${DATASTORE_TEXT}`,
      args: '<kind> [name]',
      maxPositionals: 2,
      options: {
        namespace: NAMESPACE_FLAG,
        output: OUTPUT,
        datastore: DATASTORE_FLAG,
        'show-secrets': { type: 'boolean', help: 'print BGP passwords written in plain text (hidden by default)' },
        lab: LAB_FLAG,
      },
      run: withStore('get', io, ds, async (p, open) => {
        const kind = kindOf('get', p.positionals[0]);
        const namespace = namespaceOf(p);
        const store = await open();
        let items = (await store.list(kind)).items as Resource[];
        if (kind === 'Tier') items = withFixedTiers(items as Tier[]);
        if (namespace !== undefined) items = items.filter((r) => r.metadata.namespace === namespace);
        const wanted = p.positionals[1];
        if (wanted) items = items.filter((r) => resourceKey(r) === wanted || r.metadata.name === wanted);
        if (wanted && items.length === 0) {
          const hint = OTHER_KIND[kind] ? (await notFound('get', store, kind, keyFor(kind, wanted, namespace))).split('; ')[1] : undefined;
          io.stderr(`podroute get: ${kindName(kind)} ${JSON.stringify(wanted)} not found${hint ? `; ${hint}` : ''}\n`);
          return 1;
        }
        if (p.values['show-secrets'] !== true) items = items.map(redactSecrets);
        const o = outputOf(p.values.output);
        const one = wanted !== undefined && items.length === 1;
        if (o === 'yaml') io.stdout(formatResources(items, !one));
        else if (o === 'json')
          io.stdout(
            `${JSON.stringify(one ? toManifest(items[0]!) : { apiVersion: 'projectcalico.org/v3', kind: 'List', items: items.map(toManifest) }, null, 2)}\n`,
          );
        else io.stdout(table(kind, items, o === 'wide'));
        return 0;
      }),
    },
    {
      name: 'delete',
      summary: 'remove one resource',
      description: `${KINDS_TEXT}\n${DATASTORE_TEXT}`,
      args: '<kind> <name>',
      maxPositionals: 2,
      options: { namespace: NAMESPACE_FLAG, datastore: DATASTORE_FLAG, lab: LAB_FLAG },
      run: withStore('delete', io, ds, async (p, open) => {
        const kind = kindOf('delete', p.positionals[0]);
        const name = p.positionals[1];
        if (!name) throw new UsageError('delete: <kind> <name>: which one?');
        warnFileStore('delete', p, ds, io);
        const store = await open();
        if (kind === 'Tier') await checkTierDeletable(store, name);
        const key = keyFor(kind, name, namespaceOf(p));
        const gone = await store.delete(kind, key).catch(async (e: unknown) => {
          if (e instanceof NotFoundError) throw new DatastoreError(await notFound('delete', store, kind, key), e.code);
          throw e;
        });
        io.stdout(`deleted ${kindName(gone.kind)} ${resourceKey(gone)}\n`);
        return 0;
      }),
    },
    {
      name: 'ipam',
      summary: 'IP pools and blocks in use; check and repair the allocations',
      subcommands: [
        {
          name: 'show',
          summary: 'pools and their use',
          description: DATASTORE_TEXT,
          options: {
            'show-blocks': { type: 'boolean', help: 'every block too' },
            output: OUTPUT,
            datastore: DATASTORE_FLAG,
            lab: LAB_FLAG,
          },
          run: withStore('ipam', io, ds, async (p, open) => {
            const o = outputOf(p.values.output);
            const usage = await new Ipam(await open()).usage();
            // Address counts are bigints (an IPv6 pool holds more than 2^53): numbers when exact, else strings.
            const plain = JSON.parse(
              JSON.stringify(usage, (_k, v: unknown) =>
                typeof v === 'bigint' ? (v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : String(v)) : v,
              ),
            ) as unknown;
            if (o === 'json' || o === 'yaml') io.stdout(o === 'json' ? `${JSON.stringify(plain, null, 2)}\n` : stringifyYaml(plain));
            else io.stdout(formatIpamShow(usage, p.values['show-blocks'] === true || o === 'wide'));
            return 0;
          }),
        },
        {
          name: 'check',
          summary: 'allocations without an owner, owners without an allocation, endpoints this host lacks (exit 1 if any)',
          description: `${DATASTORE_TEXT}\nRun on a node, it also compares that node's WorkloadEndpoints with this host's kernel: each one's host\n  interface, and its addresses on the pod's end (read through the pod's named network namespace).`,
          options: {
            output: checkOutput,
            datastore: DATASTORE_FLAG,
            lab: LAB_FLAG,
            node: {
              type: 'string',
              value: '<name>',
              help: "the node whose endpoints to compare with this host's kernel (default: this host's name, when the store has such a Node)",
            },
          },
          run: withStore('ipam', io, ds, async (p, open) => {
            const store = await open();
            const [blocks, weps, nodes] = await Promise.all([store.list('IPAMBlock'), store.list('WorkloadEndpoint'), store.list('Node')]);
            const node = typeof p.values.node === 'string' ? p.values.node : undefined;
            const kernel = await kernelToCompare(node, weps.items, nodes.items);
            const report = checkIpam(blocks.items, weps.items, nodes.items, kernel);
            io.stdout(p.values.output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : formatIpamCheck(report));
            return report.ok ? 0 : 1;
          }),
        },
        {
          name: 'repair',
          summary: 'release what check found leaked',
          description: DATASTORE_TEXT,
          options: { output: checkOutput, datastore: DATASTORE_FLAG, lab: LAB_FLAG },
          run: withStore('ipam', io, ds, async (p, open) => {
            const report = await repairIpam(await open());
            io.stdout(p.values.output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : formatIpamRepair(report));
            return 0;
          }),
        },
      ],
    },
  ];
}

/**
 * Runs `podroute <argv>` for one of the datastore commands, read by the same tree as the
 * podroute command line (help and unknown flags included); returns the exit code. `ds` replaces
 * the datastore the flags or the environment name.
 */
/**
 * `podroute node drain <node>` and `undrain`: the Node's drain annotation, which its agent
 * follows (RFC 8326: routes again with GRACEFUL_SHUTDOWN, the peers given time to move, then the
 * sessions closed, until undrained). Written to the store, so it works from anywhere.
 */
export function nodeDrainCommands(io: CommandIo, ds?: BackendDatastore): CommandSpec[] {
  const command = (name: 'drain' | 'undrain', summary: string): CommandSpec => ({
    name,
    summary,
    args: '<node>',
    maxPositionals: 1,
    options: { datastore: DATASTORE_FLAG, lab: LAB_FLAG },
    run: withStore(`node ${name}`, io, ds, async (p, open) => {
      const node = p.positionals[0];
      if (!node) throw new UsageError(`node ${name}: <node> is required`);
      const store = await open();
      const found = await store.get('Node', node);
      if (!found) throw new NotFoundError('Node', node);
      const annotations = { ...found.metadata.annotations };
      if (name === 'drain') annotations[DRAIN_ANNOTATION] = new Date().toISOString();
      else delete annotations[DRAIN_ANNOTATION];
      await store.update({ ...found, metadata: { ...found.metadata, annotations } });
      io.stdout(
        name === 'drain'
          ? `Node ${node}: draining (its agent announces its routes with GRACEFUL_SHUTDOWN, waits for its peers to move, then closes its sessions)\n`
          : `Node ${node}: undrained (its agent opens its sessions again)\n`,
      );
      return 0;
    }),
  });
  return [
    command('drain', 'take a node out of BGP without loss (RFC 8326 graceful shutdown), until undrain'),
    command('undrain', 'bring a drained node back into BGP'),
  ];
}

export function runDatastoreCommand(argv: readonly string[], io: CommandIo, ds?: BackendDatastore): Promise<number> {
  return dispatch({ name: 'podroute', summary: 'the datastore commands', subcommands: datastoreCommands(io, ds) }, argv, io);
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
    else if (r.kind === 'BGPFilter')
      for (const list of ['exportV4', 'importV4', 'exportV6', 'importV6'] as const) row.push(String(r.spec[list]?.length ?? 0));
    else if (r.kind === 'IPAMBlock') row.push(r.spec.cidr, r.spec.affinity ?? '');
    else if (r.kind === 'WorkloadEndpoint')
      row.push(r.spec.node, r.spec.interfaceName, r.spec.ipNetworks.join(','), labelText(r.metadata.labels));
    else if (r.kind === 'Namespace') row.push(labelText(r.metadata.labels));
    else if (r.kind === 'Tier') row.push(r.spec.order === undefined ? '' : String(r.spec.order), r.spec.defaultAction);
    else if (r.kind === 'NetworkPolicy' || r.kind === 'GlobalNetworkPolicy')
      row.push(
        r.spec.tier ?? 'default',
        r.spec.order === undefined ? '' : String(r.spec.order),
        r.spec.selector || 'all()',
        r.spec.types.join(','),
      );
    else if (r.kind === 'KubernetesNetworkPolicy') row.push(labelSelectorToCalico(r.spec.podSelector), r.spec.policyTypes.join(','));
    else if (r.kind === 'AdminNetworkPolicy' || r.kind === 'BaselineAdminNetworkPolicy')
      row.push(
        ...(r.kind === 'AdminNetworkPolicy' ? [String(r.spec.priority)] : []),
        subjectText(r.spec.subject),
        String(r.spec.ingress?.length ?? 0),
        String(r.spec.egress?.length ?? 0),
      );
    else if (r.kind === 'StagedNetworkPolicy' || r.kind === 'StagedGlobalNetworkPolicy') {
      const s = r.spec;
      row.push(s.stagedAction, s.tier ?? 'default');
      if (s.stagedAction === 'Set') row.push(s.order === undefined ? '' : String(s.order), s.selector || 'all()', s.types.join(','));
      else row.push('', '', '');
    } else if (r.kind === 'StagedKubernetesNetworkPolicy' && r.spec.stagedAction === 'Set')
      row.push(r.spec.stagedAction, labelSelectorToCalico(r.spec.podSelector), r.spec.policyTypes.join(','));
    else if (r.kind === 'StagedKubernetesNetworkPolicy') row.push(r.spec.stagedAction, '', '');
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
    BGPFilter: ['NAME', 'EXPORTV4', 'IMPORTV4', 'EXPORTV6', 'IMPORTV6'],
    IPAMBlock: ['NAME', 'CIDR', 'AFFINITY'],
    WorkloadEndpoint: ['NAME', 'NODE', 'INTERFACE', 'NETWORKS', 'LABELS'],
    Namespace: ['NAME', 'LABELS'],
    Tier: ['NAME', 'ORDER', 'DEFAULTACTION'],
    NetworkPolicy: ['NAME', 'TIER', 'ORDER', 'SELECTOR', 'TYPES'],
    GlobalNetworkPolicy: ['NAME', 'TIER', 'ORDER', 'SELECTOR', 'TYPES'],
    KubernetesNetworkPolicy: ['NAME', 'POD-SELECTOR', 'POLICY-TYPES'],
    AdminNetworkPolicy: ['NAME', 'PRIORITY', 'SUBJECT', 'INGRESS-RULES', 'EGRESS-RULES'],
    BaselineAdminNetworkPolicy: ['NAME', 'SUBJECT', 'INGRESS-RULES', 'EGRESS-RULES'],
    StagedNetworkPolicy: ['NAME', 'ACTION', 'TIER', 'ORDER', 'SELECTOR', 'TYPES'],
    StagedGlobalNetworkPolicy: ['NAME', 'ACTION', 'TIER', 'ORDER', 'SELECTOR', 'TYPES'],
    StagedKubernetesNetworkPolicy: ['NAME', 'ACTION', 'POD-SELECTOR', 'POLICY-TYPES'],
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

/** An admin policy's subject in Calico's selector syntax: `pods <selector> in namespaces <selector>`. */
function subjectText(s: AdminNetworkPolicySubject): string {
  if (s.pods) return `pods ${labelSelectorToCalico(s.pods.podSelector)} in namespaces ${labelSelectorToCalico(s.pods.namespaceSelector)}`;
  return `namespaces ${labelSelectorToCalico(s.namespaces ?? {})}`;
}

const labelText = (labels: Readonly<Record<string, string>> | undefined): string =>
  Object.entries(labels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',');

/** How messages name a kind: Kubernetes' NetworkPolicy by its group, so it is not taken for Calico's. */
function kindName(kind: Kind): string {
  return kind === 'KubernetesNetworkPolicy' ? 'NetworkPolicy.networking.k8s.io' : manifestKind(kind);
}
