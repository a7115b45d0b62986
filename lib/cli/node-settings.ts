// Every setting `podroute node run` takes, declared once: its key in the --config file, its
// flag, the environment variables calico/node reads it from, how it is written and its help.
// node-config.ts reads and checks the three sources from this table.
import type { NodeAgentOptions } from '../agent/index.js';
import type { DatastoreConfig } from '../datastore/index.js';
import type { OptionSpec } from './args.js';
import { DEFAULT_CONTROL } from './flags.js';

/** Everything `node run` can be told, from a file, the environment or flags (flags win). */
export interface NodeRunConfig {
  nodeName?: string;
  ipv4Address?: string;
  ipAutodetectionMethod?: string;
  /** Calico's IP6: an IPv6 address with prefix length, autodetect, or none (the default: no IPv6 sessions). */
  ipv6Address?: string;
  ip6AutodetectionMethod?: string;
  /** Calico's CALICO_ROUTER_ID: a dotted IPv4 router ID, or hash (from the node name). Default: the IPv4 address, else hash. */
  routerId?: string;
  uplink?: string;
  asNumber?: number;
  labels?: Record<string, string>;
  routeReflectorClusterId?: string;
  bgpPort?: number;
  holdTime?: number;
  connectRetryTime?: number;
  restartTime?: number;
  gracefulRestartWaitMs?: number;
  dataplane?: 'linux' | 'memory';
  /** Network policy and NAT-outgoing in nftables: on (default) or off. */
  policy?: 'on' | 'off';
  /** Cluster IPs, NodePorts and EndpointSlices for Services, written by this agent too: on (default) or off. */
  serviceController?: 'on' | 'off';
  datastore?: DatastoreConfig;
  control?: string;
  /** The socket the CNI shim calls the agent on: a path, or off. Default /run/podroute/cni.sock as root, else off. */
  cniSocket?: string;
  /** Port for /metrics, /liveness, /readiness; 0 turns it off. Default 9099. */
  healthPort?: number;
  /** The address that port listens on (Felix's healthHost). Default 127.0.0.1: this host only. */
  healthHost?: string;
  /** Port of the read-only web page (sessions, routes, the cluster, flows); 0 or absent: none. */
  webPort?: number;
  /** The address the web page listens on. Default 127.0.0.1: this host only. */
  webHost?: string;
  defaultIpv4Pool?: NodeAgentOptions['defaultIpv4Pool'];
  /** Seconds between felix's full resyncs. Default 90. */
  resyncInterval?: number;
  /** Calico's name: Debug, Info (default), Warning, Error, or none. */
  logSeverityScreen?: string;
  /** json (default, one object a line) or text. */
  logFormat?: string;
}

/**
 * How a setting is written: text; a whole number; a number of seconds (or milliseconds); labels
 * (k=v,... on the command line, a mapping in the file); the default pool; the datastore.
 */
export type Kind = 'text' | 'whole' | 'duration' | 'labels' | 'pool' | 'datastore';

interface Setting {
  kind: Kind;
  /** The flag's name without its dashes; none: the file only. */
  flag?: string;
  /** How help names the flag's value. */
  value?: string;
  help: string;
  /** Environment variables, the first set wins. */
  env?: readonly string[];
}

export const SETTINGS: { readonly [K in keyof Required<NodeRunConfig>]: Setting } = {
  nodeName: {
    kind: 'text',
    flag: 'name',
    value: '<name>',
    help: "this node's name (default: the host name)",
    env: ['PODROUTE_NODENAME', 'NODENAME'],
  },
  ipv4Address: {
    kind: 'text',
    flag: 'ip',
    value: '<address/len|autodetect|none>',
    help: "the node's IPv4 address with its prefix length; autodetect (default), or none for IPv6 only",
    env: ['PODROUTE_IP', 'IP'],
  },
  ipAutodetectionMethod: {
    kind: 'text',
    flag: 'ip-autodetection-method',
    value: '<method>',
    help: 'how autodetect finds it: first-found (default) or interface=<regex>',
    env: ['PODROUTE_IP_AUTODETECTION_METHOD', 'IP_AUTODETECTION_METHOD'],
  },
  ipv6Address: {
    kind: 'text',
    flag: 'ip6',
    value: '<address/len|autodetect|none>',
    help: "the node's IPv6 address with its prefix length, or autodetect; none (default): no IPv6 sessions",
    env: ['PODROUTE_IP6', 'IP6'],
  },
  ip6AutodetectionMethod: {
    kind: 'text',
    flag: 'ip6-autodetection-method',
    value: '<method>',
    help: 'how IPv6 autodetect finds it: first-found (default) or interface=<regex>',
    env: ['PODROUTE_IP6_AUTODETECTION_METHOD', 'IP6_AUTODETECTION_METHOD'],
  },
  routerId: {
    kind: 'text',
    flag: 'router-id',
    value: '<a.b.c.d|hash>',
    help: 'the BGP router ID, or hash (from the node name); default: the IPv4 address, else hash',
    env: ['PODROUTE_ROUTER_ID', 'CALICO_ROUTER_ID'],
  },
  uplink: {
    kind: 'text',
    flag: 'uplink',
    value: '<interface>',
    help: "the interface toward the other nodes (default: the address's, else eth0)",
  },
  asNumber: {
    kind: 'whole',
    flag: 'as',
    value: '<asn>',
    help: "this node's AS number (default: the BGPConfiguration's, else 64512)",
    env: ['PODROUTE_AS', 'AS'],
  },
  labels: { kind: 'labels', flag: 'labels', value: '<k=v,...>', help: "labels of this node's Node (peer selectors match them)" },
  routeReflectorClusterId: {
    kind: 'text',
    flag: 'cluster-id',
    value: '<a.b.c.d>',
    help: 'be a route reflector with this cluster ID',
    env: ['PODROUTE_CLUSTER_ID'],
  },
  bgpPort: { kind: 'whole', flag: 'bgp-port', value: '<port>', help: 'the port BGP listens on and dials (default 179)' },
  holdTime: { kind: 'duration', flag: 'hold-time', value: '<seconds>', help: 'the hold time offered to peers (default 90)' },
  connectRetryTime: {
    kind: 'duration',
    flag: 'connect-retry',
    value: '<seconds>',
    help: 'seconds between attempts to reach a peer (default 3)',
  },
  restartTime: {
    kind: 'duration',
    flag: 'restart-time',
    value: '<seconds>',
    help: "how long peers keep this node's routes while it restarts (graceful restart, default 120)",
  },
  gracefulRestartWaitMs: { kind: 'duration', help: 'ms a restarting agent waits for its peers before it programs (default 30000)' },
  dataplane: {
    kind: 'text',
    flag: 'dataplane',
    value: 'linux|memory',
    help: 'linux programs the kernel (default); memory programs nothing (tests and demos)',
  },
  policy: { kind: 'text', flag: 'policy', value: 'on|off', help: 'network policy and natOutgoing in nftables (default on)' },
  serviceController: {
    kind: 'text',
    flag: 'service-controller',
    value: 'on|off',
    help: "write Services' cluster IPs, NodePorts and EndpointSlices too (default on)",
  },
  datastore: {
    kind: 'datastore',
    flag: 'datastore',
    value: 'redis://host:port|etcd://host:2379[,...]|memory',
    help: 'where the cluster lives (default memory, or PODROUTE_REDIS_URL, PODROUTE_ETCD_ENDPOINTS, PODROUTE_DATASTORE)',
  },
  control: {
    kind: 'text',
    flag: 'control',
    value: '<socket>',
    help: `serve the control API on this socket (default ${DEFAULT_CONTROL})`,
    env: ['PODROUTE_CONTROL'],
  },
  cniSocket: {
    kind: 'text',
    flag: 'cni-socket',
    value: '<path|off>',
    help: 'where the CNI shim calls the agent (default /run/podroute/cni.sock as root, else off)',
    env: ['PODROUTE_CNI_SOCKET'],
  },
  healthPort: {
    kind: 'whole',
    flag: 'health-port',
    value: '<port>',
    help: 'port of /metrics, /liveness, /readiness; 0 turns it off (default 9099)',
  },
  healthHost: {
    kind: 'text',
    flag: 'health-host',
    value: '<address>',
    help: 'the address that port listens on (default 127.0.0.1; 0.0.0.0 or :: for every interface)',
    env: ['PODROUTE_HEALTH_HOST', 'FELIX_HEALTHHOST'],
  },
  webPort: {
    kind: 'whole',
    flag: 'web-port',
    value: '<port>',
    help: 'port of the read-only web page: sessions, routes, the cluster, flows (default 0: no page)',
    env: ['PODROUTE_WEB_PORT'],
  },
  webHost: {
    kind: 'text',
    flag: 'web-host',
    value: '<address>',
    help: 'the address the web page listens on (default 127.0.0.1; from elsewhere through ssh -L)',
    env: ['PODROUTE_WEB_HOST'],
  },
  defaultIpv4Pool: {
    kind: 'pool',
    flag: 'default-pool',
    value: '<cidr[,option...]|none>',
    help: 'the IPv4 pool made when there is none; options vxlan=Never|Always|CrossSubnet, blockSize=N, natOutgoing=true|false',
    env: ['PODROUTE_IPV4POOL_CIDR', 'CALICO_IPV4POOL_CIDR'],
  },
  resyncInterval: { kind: 'duration', help: "seconds between felix's full resyncs (default 90)" },
  logSeverityScreen: {
    kind: 'text',
    flag: 'log-level',
    value: 'debug|info|warning|error|none',
    help: 'the least severe line logged (default info)',
    env: ['PODROUTE_LOG_LEVEL', 'FELIX_LOGSEVERITYSCREEN'],
  },
  logFormat: {
    kind: 'text',
    flag: 'log-format',
    value: 'json|text',
    help: 'json lines (default) or text for people',
    env: ['PODROUTE_LOG_FORMAT'],
  },
};

export const KEYS = Object.keys(SETTINGS) as (keyof NodeRunConfig)[];

/** The flags of `node run`: --config and one per setting, each help naming its key in the file and its environment. */
export const NODE_RUN_OPTIONS: Record<string, OptionSpec> = {
  config: {
    type: 'string',
    value: '<file.yaml>',
    help: 'a YAML file of these settings by their keys (flags and the environment win over it)',
  },
  ...Object.fromEntries(
    KEYS.flatMap((key) => {
      const s = SETTINGS[key];
      if (!s.flag) return [];
      const env = s.env ? `, env ${s.env.join(' or ')}` : '';
      return [[s.flag, { type: 'string', value: s.value, help: `${s.help} [${key}${env}]` } satisfies OptionSpec]];
    }),
  ),
};

/** What help says beyond the flags: the precedence, and the settings only a file takes. */
export const NODE_RUN_DESCRIPTION = `Each flag's [key] is its name in the --config file. A flag wins over the environment (calico/node's
names), which wins over the file. Only in the file:
${KEYS.filter((k) => !SETTINGS[k].flag)
  .map((k) => `  ${k.padEnd(22)} ${SETTINGS[k].help}`)
  .join('\n')}`;
