// FelixConfiguration as the node agent honours it: the "default" resource, then the node's own
// "node.<name>" over it, as Calico's Felix merges them; only the fields podroute's felix has a
// knob for exist (validation refused the rest by name). Flags and the environment still win.
import type { FelixOptions } from '../../felix/index.js';
import type { FelixConfiguration, FelixConfigurationSpec } from '../resources/index.js';
import { durationSeconds } from './peers.js';
import type { FlowLogSettings } from './flow-log.js';
import type { AggregationKind } from './flow-records.js';

export interface FelixSettings {
  felix: FelixOptions;
  /** wireguardEnabled / wireguardEnabledV6, when either is on: this node makes keys and encrypts, per family. */
  wireguard?: { v4: boolean; v6: boolean };
  healthHost?: string;
  /** 0: no health port (healthEnabled: false). */
  healthPort?: number;
  /** flowLogsFileEnabled and the window and aggregation fields: the agent's flow log settings. */
  flowLogs?: FlowLogSettings;
}

export function felixSettings(configs: readonly FelixConfiguration[], nodeName: string): FelixSettings {
  const spec: FelixConfigurationSpec = {
    ...configs.find((c) => c.metadata.name === 'default')?.spec,
    ...configs.find((c) => c.metadata.name === `node.${nodeName}`)?.spec,
  };
  const felix: { -readonly [K in keyof FelixOptions]: FelixOptions[K] } = {};
  if (spec.routeRefreshInterval !== undefined)
    felix.resyncIntervalMs = spec.routeRefreshInterval === '0' ? 0 : durationSeconds(spec.routeRefreshInterval) * 1000;
  const vxlan = {
    ...(spec.vxlanVNI !== undefined ? { vni: spec.vxlanVNI } : {}),
    ...(spec.vxlanPort !== undefined ? { port: spec.vxlanPort } : {}),
    ...(spec.vxlanMTU !== undefined ? { mtu: spec.vxlanMTU } : {}),
    ...(spec.vxlanMTUV6 !== undefined ? { mtuV6: spec.vxlanMTUV6 } : {}),
  };
  if (Object.keys(vxlan).length > 0) felix.vxlan = vxlan;
  if (spec.ipipMTU !== undefined) felix.ipip = { mtu: spec.ipipMTU };
  const wireguard = {
    ...(spec.wireguardListeningPort !== undefined ? { port: spec.wireguardListeningPort } : {}),
    ...(spec.wireguardListeningPortV6 !== undefined ? { portV6: spec.wireguardListeningPortV6 } : {}),
    ...(spec.wireguardInterfaceName !== undefined ? { interfaceName: spec.wireguardInterfaceName } : {}),
    ...(spec.wireguardInterfaceNameV6 !== undefined ? { interfaceNameV6: spec.wireguardInterfaceNameV6 } : {}),
    ...(spec.wireguardMTU !== undefined ? { mtu: spec.wireguardMTU } : {}),
    ...(spec.wireguardMTUV6 !== undefined ? { mtuV6: spec.wireguardMTUV6 } : {}),
    ...(spec.wireguardRoutingRulePriority !== undefined ? { rulePriority: spec.wireguardRoutingRulePriority } : {}),
    ...(spec.wireguardKeepAlive !== undefined
      ? { keepAliveSeconds: spec.wireguardKeepAlive === '0' ? 0 : durationSeconds(spec.wireguardKeepAlive) }
      : {}),
  };
  if (Object.keys(wireguard).length > 0) felix.wireguard = wireguard;
  const out: FelixSettings = { felix };
  if (spec.wireguardEnabled || spec.wireguardEnabledV6)
    out.wireguard = { v4: spec.wireguardEnabled === true, v6: spec.wireguardEnabledV6 === true };
  if (spec.healthHost !== undefined) out.healthHost = spec.healthHost === 'localhost' ? '127.0.0.1' : spec.healthHost;
  if (spec.flowLogsFileEnabled)
    out.flowLogs = {
      ...(spec.flowLogsFlushInterval !== undefined ? { flushIntervalMs: durationSeconds(spec.flowLogsFlushInterval) * 1000 } : {}),
      ...(spec.flowLogsFileAggregationKindForAllowed !== undefined
        ? { aggregationAllowed: spec.flowLogsFileAggregationKindForAllowed as AggregationKind }
        : {}),
      ...(spec.flowLogsFileAggregationKindForDenied !== undefined
        ? { aggregationDenied: spec.flowLogsFileAggregationKindForDenied as AggregationKind }
        : {}),
      ...(spec.flowLogsConntrackMarkMask !== undefined ? { ctMark: spec.flowLogsConntrackMarkMask } : {}),
      ...(spec.flowLogsPoolsOnly !== undefined ? { poolsOnly: spec.flowLogsPoolsOnly } : {}),
    };
  if (spec.healthEnabled === false) out.healthPort = 0;
  else if (spec.healthPort !== undefined) out.healthPort = spec.healthPort;
  return out;
}
