// FelixConfiguration: the routing fields podroute's felix has a knob for are checked and kept;
// every other field Calico documents is refused by name, and an unknown one is an error with
// the closest known name.
import { FELIX_FIELDS, FELIX_REFUSED } from './calico-fields.js';
import type { Checker, Obj } from './checker.js';

const DURATION_RE = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;
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
  ];
  for (const [k, min, max] of ints) {
    const v = c.int(s, k, 'spec', min, max);
    if (v !== undefined) out[k] = v;
  }
  const host = c.str(s, 'healthHost', 'spec');
  if (host !== undefined) {
    if (host !== 'localhost') c.ip(host, 'spec.healthHost');
    out.healthHost = host;
  }
  const enabled = c.bool(s, 'healthEnabled', 'spec');
  if (enabled !== undefined) out.healthEnabled = enabled;
  const sev = checkLogSeverity(c, s);
  if (sev !== undefined) out.logSeverityScreen = sev;
  return out;
}

/** logSeverityScreen (BGPConfiguration and FelixConfiguration): Info is what podroute logs; the other levels it cannot give. */
export function checkLogSeverity(c: Checker, s: Obj): 'Info' | undefined {
  if (s.logSeverityScreen === undefined || s.logSeverityScreen === null) return undefined;
  const level = c.oneOf(s, 'logSeverityScreen', 'spec', LOG_LEVELS, 'Info');
  if (level !== 'Info')
    c.fail('spec.logSeverityScreen', `${level} is not supported by podroute: its logs have no levels, every event is logged as Info would`);
  return level;
}
