// BGPConfiguration: the cluster's (or a node's) AS, mesh, port and mesh password, the service
// ranges to advertise, and communities by name or value for the prefixes it advertises.
import { BGP_CONFIGURATION_FIELDS, BGP_CONFIGURATION_REFUSED } from './calico-fields.js';
import type { Checker, Obj } from './checker.js';
import { closestName } from './suggest.js';
import { checkPassword } from './validate-bgp-peer.js';
import { checkLogSeverity } from './validate-felix.js';

const DURATION_RE = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;
const COMMUNITY_RE = /^(\d+:\d+|\d+:\d+:\d+)$/;

export function checkBGPConfiguration(c: Checker, s: Obj, name: string): Obj {
  c.only(s, BGP_CONFIGURATION_FIELDS, 'spec', BGP_CONFIGURATION_REFUSED);
  const out: Obj = {};
  const as = c.asNumber(s, 'asNumber', 'spec');
  if (as !== undefined) out.asNumber = as;
  const mesh = c.bool(s, 'nodeToNodeMeshEnabled', 'spec');
  if (mesh !== undefined) out.nodeToNodeMeshEnabled = mesh;
  const port = c.int(s, 'listenPort', 'spec', 1, 65535);
  if (port !== undefined) out.listenPort = port;
  const sev = checkLogSeverity(c, s);
  if (sev !== undefined) out.logSeverityScreen = sev;
  const meshRestart = c.str(s, 'nodeMeshMaxRestartTime', 'spec');
  if (meshRestart !== undefined) {
    if (!DURATION_RE.test(meshRestart))
      c.fail('spec.nodeMeshMaxRestartTime', `${JSON.stringify(meshRestart)} is not a duration like 120s or 2m`);
    out.nodeMeshMaxRestartTime = meshRestart;
  }
  if (s.nodeMeshPassword !== undefined && s.nodeMeshPassword !== null) {
    if (name !== 'default') c.fail('spec.nodeMeshPassword', 'can only be set on the BGPConfiguration named "default"');
    out.nodeMeshPassword = checkPassword(c, s.nodeMeshPassword, 'spec.nodeMeshPassword');
  }
  const ignored = c.list(s, 'ignoredInterfaces', 'spec', 'a list of interface names');
  if (ignored !== undefined) {
    // podroute exports no interface routes at all, so every interface is already ignored.
    if (ignored.some((x) => typeof x !== 'string')) c.fail('spec.ignoredInterfaces', 'must be a list of interface names');
    out.ignoredInterfaces = ignored;
  }
  // The node agent listens on the node's address: NodeIP is what it does already.
  const bind = c.oneOf(s, 'bindMode', 'spec', ['None', 'NodeIP'] as const, 'NodeIP');
  if (bind === 'None')
    c.fail(
      'spec.bindMode',
      "None is not supported by podroute: the node agent listens on the node's address (NodeIP), not on every address",
    );
  if (s.bindMode !== undefined && s.bindMode !== null) out.bindMode = bind;
  for (const k of ['serviceClusterIPs', 'serviceExternalIPs', 'serviceLoadBalancerIPs'] as const) {
    if (s[k] === undefined || s[k] === null) continue;
    if (!Array.isArray(s[k])) c.fail(`spec.${k}`, 'must be a list of {cidr}');
    out[k] = (s[k] as unknown[]).map((e, i) => {
      const cidr = c.str(c.obj(e, `spec.${k}[${i}]`), 'cidr', `spec.${k}[${i}]`, true)!;
      c.cidr(cidr, `spec.${k}[${i}].cidr`);
      return { cidr };
    });
  }
  if (s.communities !== undefined && s.communities !== null) out.communities = checkCommunities(c, s.communities);
  if (s.prefixAdvertisements !== undefined && s.prefixAdvertisements !== null)
    out.prefixAdvertisements = checkPrefixAdvertisements(
      c,
      s.prefixAdvertisements,
      (out.communities as { name: string }[] | undefined) ?? [],
    );
  return out;
}

/** spec.communities: named values the prefix advertisements may use. */
function checkCommunities(c: Checker, v: unknown): { name: string; value: string }[] {
  if (!Array.isArray(v)) c.fail('spec.communities', 'must be a list of {name, value}');
  return v.map((e, i) => {
    const p = `spec.communities[${i}]`;
    const m = c.obj(e, p);
    c.only(m, ['name', 'value'], p);
    const value = c.str(m, 'value', p, true)!;
    if (!COMMUNITY_RE.test(value)) c.fail(`${p}.value`, `${JSON.stringify(value)} is not a community (aa:nn or aa:nn:mm)`);
    communityProblem(c, value, `${p}.value`);
    return { name: c.str(m, 'name', p, true)!, value };
  });
}

/** spec.prefixAdvertisements: a CIDR and its communities, each a name from spec.communities or a value. */
function checkPrefixAdvertisements(
  c: Checker,
  v: unknown,
  communities: readonly { name: string }[],
): { cidr: string; communities: string[] }[] {
  if (!Array.isArray(v)) c.fail('spec.prefixAdvertisements', 'must be a list');
  return v.map((e, i) => {
    const p = `spec.prefixAdvertisements[${i}]`;
    const m = c.obj(e, p);
    c.only(m, ['cidr', 'communities'], p);
    const cidr = c.str(m, 'cidr', p, true)!;
    c.cidr(cidr, `${p}.cidr`);
    const comms = m.communities ?? [];
    if (!Array.isArray(comms) || comms.some((x) => typeof x !== 'string')) c.fail(`${p}.communities`, 'must be a list of names or values');
    const named = new Set(communities.map((x) => x.name));
    (comms as string[]).forEach((x, j) => {
      if (named.has(x)) return;
      if (!COMMUNITY_RE.test(x)) {
        const near = closestName(x, named);
        c.fail(
          `${p}.communities[${j}]`,
          `${JSON.stringify(x)} is neither a name in spec.communities nor a value (aa:nn or aa:nn:mm)${near ? `; did you mean ${near}?` : ''}`,
        );
      }
      communityProblem(c, x, `${p}.communities[${j}]`);
    });
    return { cidr, communities: comms as string[] };
  });
}

/** A community value's parts in range: 16 bits each for aa:nn, 32 bits each for aa:nn:mm. */
function communityProblem(c: Checker, value: string, field: string): void {
  if (!COMMUNITY_RE.test(value)) return;
  const parts = value.split(':').map(Number);
  if (parts.length === 2 && parts.some((x) => x > 65535)) c.fail(field, `${value}: standard community parts go up to 65535`);
  if (parts.some((x) => x > 4294967295)) c.fail(field, `${value} has a part out of range`);
}
