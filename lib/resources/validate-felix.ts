// FelixConfiguration: the routing and WireGuard fields podroute's felix has a knob for are checked and kept;
// every other field Calico documents is refused by name, and an unknown one is an error with
// the closest known name.
import { FELIX_FIELDS, FELIX_REFUSED } from './calico-fields.js';
import type { Checker, Obj } from './checker.js';

const DURATION_RE = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;
/** What Linux takes as a device name: up to 15 characters, none of them '/', ':' or blank. */
const IFNAME_RE = /^[a-zA-Z0-9_.-]{1,15}$/;
const LOG_LEVELS = ['Debug', 'Info', 'Warning', 'Error', 'Fatal', 'None'] as const;

export function checkFelixConfiguration(c: Checker, s: Obj, name: string): Obj {
  if (name !== 'default' && !name.startsWith('node.'))
    c.fail('metadata.name', `${JSON.stringify(name)}: a FelixConfiguration is named "default" or "node.<node name>"`);
  c.only(s, FELIX_FIELDS, 'spec', FELIX_REFUSED);
  const out: Obj = {};
  const refresh = s.routeRefreshInterval;
  if (refresh !== undefined && refresh !== null) {
    if (typeof refresh !== 'string' || (refresh !== '0' && !DURATION_RE.test(refresh)))
      c.fail('spec.routeRefreshInterval', `${JSON.stringify(refresh)} is not a duration like 90s (or 0 for none)`);
    out.routeRefreshInterval = refresh;
  }
  const ints: [string, number, number][] = [
    ['vxlanVNI', 1, 0xffffff],
    ['vxlanPort', 1, 65535],
    ['vxlanMTU', 576, 65535],
    ['vxlanMTUV6', 1280, 65535],
    ['ipipMTU', 576, 65535],
    ['healthPort', 0, 65535],
    ['wireguardListeningPort', 1, 65535],
    ['wireguardListeningPortV6', 1, 65535],
    // Below main's 32766, where a rule would come too late to take pod traffic from the main table.
    ['wireguardRoutingRulePriority', 1, 32765],
  ];
  for (const [k, min, max] of ints) {
    const v = c.int(s, k, 'spec', min, max);
    if (v !== undefined) out[k] = v;
  }
  // 0 is Calico's "work it out"; otherwise no less than the family's minimum link MTU.
  for (const [k, min] of [
    ['wireguardMTU', 576],
    ['wireguardMTUV6', 1280],
  ] as const) {
    const v = c.int(s, k, 'spec', 0, 65535);
    if (v === undefined) continue;
    if (v !== 0 && v < min)
      c.fail(`spec.${k}`, `${v} is below ${min}; 0 means the default (the underlay's 1500 less WireGuard's overhead)`);
    out[k] = v;
  }
  for (const k of ['wireguardEnabled', 'wireguardEnabledV6'] as const) {
    const v = c.bool(s, k, 'spec');
    if (v !== undefined) out[k] = v;
  }
  for (const k of ['wireguardInterfaceName', 'wireguardInterfaceNameV6'] as const) {
    const v = c.str(s, k, 'spec');
    if (v === undefined) continue;
    if (!IFNAME_RE.test(v)) c.fail(`spec.${k}`, `${JSON.stringify(v)} is not a device name (1 to 15 letters, digits, '.', '_' or '-')`);
    out[k] = v;
  }
  const names = [out.wireguardInterfaceName ?? 'wireguard.cali', out.wireguardInterfaceNameV6 ?? 'wg-v6.cali'];
  if (names[0] === names[1]) c.fail('spec.wireguardInterfaceNameV6', `${JSON.stringify(names[1])} is the IPv4 device's name too`);
  const keepAlive = s.wireguardKeepAlive;
  if (keepAlive !== undefined && keepAlive !== null) {
    if (typeof keepAlive !== 'string' || (keepAlive !== '0' && !DURATION_RE.test(keepAlive)))
      c.fail('spec.wireguardKeepAlive', `${JSON.stringify(keepAlive)} is not a duration like 25s (or 0s for none)`);
    if (seconds(keepAlive) > 65535) c.fail('spec.wireguardKeepAlive', `${keepAlive} is longer than WireGuard's longest keepalive, 65535s`);
    out.wireguardKeepAlive = keepAlive;
  }
  const host = c.str(s, 'healthHost', 'spec');
  if (host !== undefined) {
    if (host !== 'localhost') c.ip(host, 'spec.healthHost');
    out.healthHost = host;
  }
  const enabled = c.bool(s, 'healthEnabled', 'spec');
  if (enabled !== undefined) out.healthEnabled = enabled;
  const flowLogs = c.bool(s, 'flowLogsFileEnabled', 'spec');
  if (flowLogs !== undefined) out.flowLogsFileEnabled = flowLogs;
  const flush = s.flowLogsFlushInterval;
  if (flush !== undefined && flush !== null) {
    if (typeof flush !== 'string' || !DURATION_RE.test(flush) || seconds(flush) < 1)
      c.fail('spec.flowLogsFlushInterval', `${JSON.stringify(flush)} is not a duration of a second or more, like 15s`);
    out.flowLogsFlushInterval = flush;
  }
  for (const k of ['flowLogsFileAggregationKindForAllowed', 'flowLogsFileAggregationKindForDenied'] as const) {
    const v = c.int(s, k, 'spec', 0, 3);
    if (v !== undefined) out[k] = v;
  }
  const mask = c.int(s, 'flowLogsConntrackMarkMask', 'spec', 0, 0xffffffff);
  if (mask !== undefined) {
    // felix's compile holds the same rule (felix/flows' ctMarkError); the resource is refused first.
    const low = (mask & -mask) >>> 0;
    if (mask === 0 || ((mask + low) & mask) !== 0)
      c.fail('spec.flowLogsConntrackMarkMask', `0x${mask.toString(16)} is not one run of contiguous bits`);
    if (mask === low) c.fail('spec.flowLogsConntrackMarkMask', `0x${mask.toString(16)} has fewer than 2 bits`);
    out.flowLogsConntrackMarkMask = mask;
  }
  const poolsOnly = c.bool(s, 'flowLogsPoolsOnly', 'spec');
  if (poolsOnly !== undefined) out.flowLogsPoolsOnly = poolsOnly;
  const sev = checkLogSeverity(c, s);
  if (sev !== undefined) out.logSeverityScreen = sev;
  return out;
}

/** A Go-style duration's length in seconds. */
function seconds(d: string): number {
  const unit: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
  let total = 0;
  for (const m of d.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) total += Number(m[1]) * (unit[m[2] ?? 's'] ?? 1);
  return total;
}

/** logSeverityScreen (BGPConfiguration and FelixConfiguration): Info is what podroute logs; the other levels it cannot give. */
export function checkLogSeverity(c: Checker, s: Obj): 'Info' | undefined {
  if (s.logSeverityScreen === undefined || s.logSeverityScreen === null) return undefined;
  const level = c.oneOf(s, 'logSeverityScreen', 'spec', LOG_LEVELS, 'Info');
  if (level !== 'Info')
    c.fail('spec.logSeverityScreen', `${level} is not supported by podroute: its logs have no levels, every event is logged as Info would`);
  return level;
}
