// What the runtime hands the plugin: the network configuration on stdin and CNI_* variables.
import { datastoreConfigFromEnv, etcdEndpoints, type DatastoreConfig } from '../datastore/index.js';
import { Checker, ValidationError, type KubernetesProtocol, type WorkloadEndpointPort, portNameProblem } from '../resources/index.js';
import { SUPPORTED_VERSIONS } from './cni-version.js';
import { CNI_CODES, CniError } from './errors.js';

export { SUPPORTED_VERSIONS };

export type CniCommand = 'ADD' | 'DEL' | 'CHECK' | 'VERSION' | 'STATUS' | 'GC';
const COMMANDS: readonly CniCommand[] = ['ADD', 'DEL', 'CHECK', 'VERSION', 'STATUS', 'GC'];

export interface NetConf {
  cniVersion: string;
  name: string;
  type: string;
  /** This host's Node name; default $NODENAME, $PODROUTE_NODENAME, then the hostname. */
  nodename?: string;
  /** Datastore; default from PODROUTE_* environment (as `podroute node run`). */
  datastore?: DatastoreConfig;
  mtu?: number;
  ipam?: IpamConf;
  prevResult?: CniResult;
  /** GC (CNI 1.1): the attachments the runtime still holds ("cni.dev/valid-attachments"). */
  validAttachments?: { containerID: string; ifname: string }[];
  /**
   * What the runtime adds for this container (the CNI conventions' `args`): `labels` are the
   * pod's labels, which policies select on; `ports` its named ports (podroute's own key).
   */
  args?: { cni?: { labels?: { key: string; value: string }[]; ports?: WorkloadEndpointPort[] } };
}

/**
 * The `ipam` section, in Calico's words: `assign_ipv4` ("true" unless "false") and
 * `assign_ipv6` ("false" unless "true") choose the families; `ipv4_pools` / `ipv6_pools`
 * name the pools (by name or CIDR) for each; `pools` is podroute's list of either family.
 */
export interface IpamConf {
  type?: string;
  pools?: string[];
  assignIpv4: boolean;
  assignIpv6: boolean;
  ipv4Pools?: string[];
  ipv6Pools?: string[];
}

const IPAM_FIELDS = ['type', 'pools', 'assign_ipv4', 'assign_ipv6', 'ipv4_pools', 'ipv6_pools'];

export interface CniEnv {
  command: CniCommand;
  containerId: string;
  netns: string;
  ifname: string;
  /** K8S_POD_NAMESPACE, K8S_POD_NAME, ... from CNI_ARGS. */
  args: Record<string, string>;
}

export interface CniResult {
  cniVersion: string;
  interfaces: { name: string; mac?: string; sandbox?: string }[];
  /** `version` ("4" or "6") only in 0.3.x and 0.4.0 results. */
  ips: { address: string; gateway?: string; interface?: number; version?: '4' | '6' }[];
  routes: { dst: string; gw?: string }[];
  dns: Record<string, unknown>;
}

export function parseEnv(env: NodeJS.ProcessEnv): CniEnv {
  const command = env.CNI_COMMAND as CniCommand | undefined;
  if (command === undefined || !COMMANDS.includes(command)) {
    throw new CniError(CNI_CODES.invalidEnvironment, `CNI_COMMAND: ${JSON.stringify(command ?? '')} is not ${COMMANDS.join(', ')}`);
  }
  const args: Record<string, string> = {};
  for (const kv of (env.CNI_ARGS ?? '').split(';')) {
    if (!kv) continue;
    const i = kv.indexOf('=');
    if (i <= 0) throw new CniError(CNI_CODES.invalidEnvironment, `CNI_ARGS: ${JSON.stringify(kv)} is not KEY=VALUE`);
    args[kv.slice(0, i)] = kv.slice(i + 1);
  }
  const out: CniEnv = { command, containerId: env.CNI_CONTAINERID ?? '', netns: env.CNI_NETNS ?? '', ifname: env.CNI_IFNAME ?? '', args };
  // VERSION, STATUS and GC concern the plugin and the network, not one container.
  if (command === 'VERSION' || command === 'STATUS' || command === 'GC') return out;
  if (!out.containerId) throw new CniError(CNI_CODES.invalidEnvironment, 'CNI_CONTAINERID: required');
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(out.containerId))
    throw new CniError(
      CNI_CODES.invalidEnvironment,
      `CNI_CONTAINERID: ${JSON.stringify(out.containerId)} must be letters, digits, '_', '.' and '-'`,
    );
  if (!out.ifname) throw new CniError(CNI_CODES.invalidEnvironment, 'CNI_IFNAME: required');
  if (out.ifname.length > 15 || /[/\s:]/.test(out.ifname))
    throw new CniError(CNI_CODES.invalidEnvironment, `CNI_IFNAME: ${JSON.stringify(out.ifname)} is not a Linux interface name`);
  if (command !== 'DEL' && !out.netns) throw new CniError(CNI_CODES.invalidEnvironment, `CNI_NETNS: required for ${command}`);
  return out;
}

export function parseNetConf(stdin: string): NetConf {
  let raw: unknown;
  try {
    raw = JSON.parse(stdin);
  } catch (e) {
    throw new CniError(CNI_CODES.decodeFailure, `network configuration on stdin is not JSON: ${(e as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new CniError(CNI_CODES.decodeFailure, 'network configuration: must be a JSON object');
  const c = raw as Record<string, unknown>;
  const str = (k: string, required: boolean): string | undefined => {
    const v = c[k];
    if (v === undefined && !required) return undefined;
    if (typeof v !== 'string' || v === '')
      throw new CniError(CNI_CODES.invalidConfig, `network configuration: ${k} must be a non-empty string`);
    return v;
  };
  const cniVersion = str('cniVersion', true)!;
  if (!(SUPPORTED_VERSIONS as readonly string[]).includes(cniVersion)) {
    throw new CniError(
      CNI_CODES.incompatibleVersion,
      `cniVersion ${cniVersion} is not supported`,
      `supported: ${SUPPORTED_VERSIONS.join(', ')}`,
    );
  }
  const conf: NetConf = { cniVersion, name: str('name', true)!, type: str('type', true)!, nodename: str('nodename', false) };
  if (c.mtu !== undefined) {
    if (!Number.isInteger(c.mtu) || (c.mtu as number) < 576 || (c.mtu as number) > 65535)
      throw new CniError(CNI_CODES.invalidConfig, `network configuration: mtu ${String(c.mtu)} must be an integer from 576 to 65535`);
    conf.mtu = c.mtu as number;
  }
  if (c.datastore !== undefined) {
    const d = c.datastore as Record<string, unknown>;
    if (typeof d !== 'object' || d === null || (d.type !== 'redis' && d.type !== 'memory' && d.type !== 'etcd'))
      throw new CniError(
        CNI_CODES.invalidConfig,
        'network configuration: datastore.type must be redis or etcd (memory lives in one process only)',
      );
    if (d.type === 'memory')
      throw new CniError(
        CNI_CODES.invalidConfig,
        'network configuration: datastore.type memory cannot be shared with the node agent; use redis',
      );
    if (d.type === 'etcd') conf.datastore = etcdNetconf(d);
    else if (d.url !== undefined && typeof d.url !== 'string')
      throw new CniError(CNI_CODES.invalidConfig, 'network configuration: datastore.url must be a string');
    else
      conf.datastore = {
        type: 'redis',
        ...(d.url ? { url: d.url as string } : {}),
        ...(typeof d.name === 'string' ? { name: d.name } : {}),
      };
  }
  if (c.ipam !== undefined) conf.ipam = parseIpam(c.ipam);
  if (c.prevResult !== undefined) conf.prevResult = c.prevResult as CniResult;
  const valid = c['cni.dev/valid-attachments'];
  if (valid !== undefined) {
    if (
      !Array.isArray(valid) ||
      valid.some((a) => typeof a !== 'object' || a === null || typeof (a as { containerID?: unknown }).containerID !== 'string')
    )
      throw new CniError(
        CNI_CODES.invalidConfig,
        'network configuration: cni.dev/valid-attachments must be a list of {containerID, ifname}',
      );
    conf.validAttachments = (valid as { containerID: string; ifname?: unknown }[]).map((a) => ({
      containerID: a.containerID,
      ifname: typeof a.ifname === 'string' ? a.ifname : '',
    }));
  }
  if (c.args !== undefined && c.args !== null) conf.args = parseArgs(c.args);
  return conf;
}

function parseIpam(raw: unknown): IpamConf {
  const bad = (msg: string): CniError => new CniError(CNI_CODES.invalidConfig, `network configuration: ipam.${msg}`);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new CniError(CNI_CODES.invalidConfig, 'network configuration: ipam must be an object');
  const i = raw as Record<string, unknown>;
  for (const k of Object.keys(i)) if (!IPAM_FIELDS.includes(k)) throw bad(`${k}: unknown field (known: ${IPAM_FIELDS.join(', ')})`);
  const list = (k: string): string[] | undefined => {
    const v = i[k];
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || v.some((p) => typeof p !== 'string' || p === ''))
      throw bad(`${k}: must be a list of pool names${k === 'pools' ? '' : ' or CIDRs'}`);
    return v as string[];
  };
  // Calico's netconf spells these as strings; a JSON boolean means the same.
  const flag = (k: string, dflt: boolean): boolean => {
    const v = i[k];
    if (v === undefined) return dflt;
    if (v === true || v === 'true') return true;
    if (v === false || v === 'false') return false;
    throw bad(`${k}: ${JSON.stringify(v)} must be "true" or "false"`);
  };
  if (i.type !== undefined && typeof i.type !== 'string') throw bad('type: must be a string');
  const out: IpamConf = {
    type: i.type as string | undefined,
    pools: list('pools'),
    assignIpv4: flag('assign_ipv4', true),
    assignIpv6: flag('assign_ipv6', false),
    ipv4Pools: list('ipv4_pools'),
    ipv6Pools: list('ipv6_pools'),
  };
  if (!out.assignIpv4 && !out.assignIpv6) throw bad('assign_ipv4: "false" with assign_ipv6 not "true" leaves the pod no address');
  return out;
}

const PORT_PROTOCOLS: readonly KubernetesProtocol[] = ['TCP', 'UDP', 'SCTP'];

/** args.cni.labels and args.cni.ports, checked by the rules the WorkloadEndpoint is held to; other args are left alone. */
function parseArgs(raw: unknown): NetConf['args'] {
  const c = new Checker(undefined);
  try {
    const args = c.obj(raw, 'args');
    if (args.cni === undefined || args.cni === null) return {};
    const cni = c.obj(args.cni, 'args.cni');
    const out: NonNullable<NetConf['args']>['cni'] = {};
    const labels = c.list(cni, 'labels', 'args.cni', 'a list of {key, value}');
    if (labels) {
      out.labels = labels.map((l, i) => {
        const m = c.obj(l, `args.cni.labels[${i}]`);
        return { key: c.labelKey(m.key, `args.cni.labels[${i}].key`), value: c.labelValue(m.value, `args.cni.labels[${i}].value`) };
      });
    }
    const ports = c.list(cni, 'ports', 'args.cni', 'a list of {name, protocol, port}');
    if (ports) {
      out.ports = ports.map((x, i) => {
        const f = `args.cni.ports[${i}]`;
        const m = c.obj(x, f);
        const name = c.str(m, 'name', f, true)!;
        const why = portNameProblem(name);
        if (why) c.fail(`${f}.name`, `${JSON.stringify(name)} is not a port name: it ${why}`);
        return { name, protocol: c.oneOf(m, 'protocol', f, PORT_PROTOCOLS, 'TCP'), port: c.num(m.port, `${f}.port`, 1, 65535) };
      });
    }
    return { cni: out };
  } catch (e) {
    if (e instanceof ValidationError) throw new CniError(CNI_CODES.invalidConfig, `network configuration: ${e.message}`);
    throw e;
  }
}

/** `"datastore": {"type": "etcd", "endpoints": ["http://10.0.0.1:2379", ...], "prefix"?, "name"?}`; errors name the field. */
function etcdNetconf(d: Record<string, unknown>): DatastoreConfig {
  const bad = (msg: string): CniError => new CniError(CNI_CODES.invalidConfig, `network configuration: ${msg}`);
  for (const k of Object.keys(d))
    if (!['type', 'endpoints', 'prefix', 'name'].includes(k)) throw bad(`datastore.${k}: unknown field for an etcd datastore`);
  const list = typeof d.endpoints === 'string' ? d.endpoints : Array.isArray(d.endpoints) ? d.endpoints.join(',') : undefined;
  if (!list || (Array.isArray(d.endpoints) && d.endpoints.some((e) => typeof e !== 'string')))
    throw bad('datastore.endpoints: the etcd members, as ["http://host:2379", ...]');
  let endpoints: string[];
  try {
    endpoints = etcdEndpoints(list, 'datastore.endpoints');
  } catch (e) {
    throw bad((e as Error).message);
  }
  if (d.prefix !== undefined && (typeof d.prefix !== 'string' || !d.prefix.startsWith('/')))
    throw bad('datastore.prefix: must be a key path such as /podroute/prod');
  if (d.name !== undefined && typeof d.name !== 'string') throw bad('datastore.name: must be a string');
  return {
    type: 'etcd',
    endpoints,
    ...(typeof d.prefix === 'string' ? { prefix: d.prefix } : {}),
    ...(typeof d.name === 'string' ? { name: d.name } : {}),
  };
}

export function datastoreConfig(conf: NetConf, env: NodeJS.ProcessEnv): DatastoreConfig {
  const d = conf.datastore ?? datastoreConfigFromEnv(env);
  if (d.type === 'memory')
    throw new CniError(
      CNI_CODES.invalidConfig,
      'no datastore configured: set datastore in the network configuration, or PODROUTE_REDIS_URL or PODROUTE_ETCD_ENDPOINTS',
    );
  return { ...d, connectWaitMs: d.connectWaitMs ?? 5000 };
}
