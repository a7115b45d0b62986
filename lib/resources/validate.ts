// Field-by-field validation. Every error names the field (spec.cidr, metadata.name, ...)
// so a user can find the line in their YAML.
import { Checker, isObj, type Obj, ValidationError } from './checker.js';
import { checkBgpPeerMaxPrefixes } from './max-prefixes.js';
import {
  BGP_CONFIGURATION_FIELDS,
  BGP_CONFIGURATION_REFUSED,
  BGP_PEER_FIELDS,
  BGP_PEER_REFUSED,
  IPAM_CONFIGURATION_FIELDS,
  IPAM_CONFIGURATION_REFUSED,
  IPPOOL_FIELDS,
  IPPOOL_REFUSED,
  NODE_BGP_FIELDS,
  NODE_BGP_REFUSED,
  NODE_FIELDS,
  NODE_REFUSED,
} from './calico-fields.js';
import { checkCalicoPolicy } from './validate-calico-policy.js';
import { checkFelixConfiguration, checkLogSeverity } from './validate-felix.js';
import { checkPassword, checkPeerIP, checkPeerSessionOptions } from './validate-bgp-peer.js';
import { closestName } from './suggest.js';
import { checkEndpointSlice, checkService, kubernetesBody } from './validate-service.js';
import { checkKubernetesNetworkPolicy, KUBERNETES_PROTOCOLS, portNameProblem } from './validate-kubernetes.js';
import {
  API_VERSION,
  API_VERSION_K8S_NETWORKING,
  API_VERSION_OWN,
  apiVersionOf,
  DEFAULT_BLOCK_SIZE,
  KINDS,
  manifestKind,
  NAMESPACE_NAME_LABEL,
  NAMESPACED_KINDS,
  type Kind,
  type Resource,
  type ObjectMeta,
  type EncapMode,
  type IPAMBlockSpec as IPAMBlockSpecShape,
} from './types.js';

export { ValidationError };

const NAME_RE = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** Kinds whose labels policies select on, held to Kubernetes' label rules. */
const STRICT_LABEL_KINDS: readonly Kind[] = [
  'Namespace',
  'WorkloadEndpoint',
  'NetworkPolicy',
  'GlobalNetworkPolicy',
  'KubernetesNetworkPolicy',
  'Service',
  'EndpointSlice',
];
/** Kinds of Kubernetes' own API groups: their apiVersion is the one Kubernetes gives them. */
const KUBERNETES_KINDS: readonly Kind[] = ['KubernetesNetworkPolicy', 'Namespace', 'Service', 'EndpointSlice'];
const MODES: readonly EncapMode[] = ['Never', 'Always', 'CrossSubnet'];
const DURATION_RE = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;
const COMMUNITY_RE = /^(\d+:\d+|\d+:\d+:\d+)$/;

/** A community value's parts in range: 16 bits each for aa:nn, 32 bits each for aa:nn:mm. */
function communityProblem(c: Checker, value: string, field: string): void {
  if (!COMMUNITY_RE.test(value)) return;
  const parts = value.split(':').map(Number);
  if (parts.length === 2 && parts.some((x) => x > 65535)) c.fail(field, `${value}: standard community parts go up to 65535`);
  if (parts.some((x) => x > 4294967295)) c.fail(field, `${value} has a part out of range`);
}

/**
 * Checks a resource read from YAML/JSON or passed by a caller, fills Calico's defaults
 * (IPPool block size and encapsulation modes), and returns a clean copy.
 */
export function validateResource(input: unknown): Resource {
  const pre: Checker = new Checker(undefined);
  const o = pre.obj(input, '(document)');
  const given = o.kind;
  if (typeof given !== 'string' || given === '') pre.fail('kind', 'is required');
  // Kubernetes' NetworkPolicy and Calico's share a kind name; the apiVersion tells them apart.
  const kind = given === 'NetworkPolicy' && o.apiVersion === API_VERSION_K8S_NETWORKING ? 'KubernetesNetworkPolicy' : given;
  if (!(KINDS as readonly string[]).includes(kind))
    pre.fail('kind', `unknown kind ${JSON.stringify(kind)} (known: ${KINDS.map(manifestKind).join(', ')})`);
  checkApiVersion(pre, kind as Kind, o.apiVersion);
  const md = pre.obj(o.metadata, 'metadata');
  const name = pre.str(md, 'name', 'metadata', true)!;
  const c: Checker = new Checker(`${manifestKind(kind as Kind)}/${name}`);
  if (kind === 'Namespace') {
    if (name.length > 63 || !DNS_LABEL.test(name))
      c.fail(
        'metadata.name',
        `${JSON.stringify(name)} must be at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit`,
      );
  } else if (name.length > 253 || !(kind === 'IPAMHandle' ? /^[A-Za-z0-9._-]+$/ : NAME_RE).test(name)) {
    c.fail(
      'metadata.name',
      `${JSON.stringify(name)} must be lower-case letters, digits, '-' and '.', starting and ending with a letter or digit`,
    );
  }
  const metadata: ObjectMeta = { name };
  const ns = c.str(md, 'namespace', 'metadata');
  if (kind === 'WorkloadEndpoint') {
    if (!ns) c.fail('metadata.namespace', 'is required for a WorkloadEndpoint');
    metadata.namespace = ns;
  } else if ((NAMESPACED_KINDS as readonly string[]).includes(kind)) {
    // As kubectl and calicoctl do, a policy without a namespace goes to "default".
    metadata.namespace = ns || 'default';
    if (metadata.namespace.length > 63 || !DNS_LABEL.test(metadata.namespace))
      c.fail('metadata.namespace', `${JSON.stringify(ns)} is not a namespace name (at most 63 lower-case letters, digits and '-')`);
  } else if (ns) c.fail('metadata.namespace', `${kind} is not namespaced`);
  const labels = STRICT_LABEL_KINDS.includes(kind as Kind) ? c.strictLabels(md, 'labels', 'metadata') : c.labels(md, 'labels', 'metadata');
  if (labels) metadata.labels = labels;
  // The API server labels every namespace with its own name, so a namespaceSelector can pick one by name.
  if (kind === 'Namespace') metadata.labels = { ...labels, [NAMESPACE_NAME_LABEL]: name };
  const annotations = md.annotations;
  if (annotations !== undefined && annotations !== null)
    metadata.annotations = c.obj(annotations, 'metadata.annotations') as Record<string, string>;
  const rv = md.resourceVersion;
  if (rv !== undefined && rv !== null && rv !== '') {
    if (typeof rv !== 'string' && typeof rv !== 'number') c.fail('metadata.resourceVersion', 'must be a string');
    if (!/^\d+$/.test(String(rv))) c.fail('metadata.resourceVersion', `${JSON.stringify(rv)} is not a revision`);
    metadata.resourceVersion = String(rv);
  }
  const ct = c.str(md, 'creationTimestamp', 'metadata');
  if (ct) metadata.creationTimestamp = ct;
  const spec =
    kind === 'Service' || kind === 'EndpointSlice'
      ? kubernetesBody(c, kind, o)
      : o.spec === undefined || o.spec === null
        ? {}
        : c.obj(o.spec, 'spec');
  const out = { apiVersion: apiVersionOf(kind as Kind), kind, metadata, spec: checkSpec(c, kind as Kind, spec, name) };
  return out as Resource;
}

const CALICO_API_VERSIONS: readonly unknown[] = [API_VERSION, API_VERSION_OWN, 'crd.projectcalico.org/v1'];

function checkApiVersion(c: Checker, kind: Kind, apiVersion: unknown): void {
  if (apiVersion === undefined || apiVersion === null) return;
  if (KUBERNETES_KINDS.includes(kind)) {
    if (apiVersion !== apiVersionOf(kind))
      c.fail('apiVersion', `must be ${apiVersionOf(kind)} for a ${manifestKind(kind)}, not ${JSON.stringify(apiVersion)}`);
  } else if (!CALICO_API_VERSIONS.includes(apiVersion)) {
    const k8s = kind === 'NetworkPolicy' ? ` (or ${API_VERSION_K8S_NETWORKING} for a Kubernetes NetworkPolicy)` : '';
    c.fail('apiVersion', `must be ${API_VERSION} or ${API_VERSION_OWN}${k8s}, not ${JSON.stringify(apiVersion)}`);
  }
}

function checkSpec(c: Checker, kind: Kind, s: Obj, name: string): unknown {
  switch (kind) {
    case 'Node': {
      c.only(s, NODE_FIELDS, 'spec', NODE_REFUSED);
      const out: Obj = {};
      if (s.bgp !== undefined && s.bgp !== null) {
        const b = c.obj(s.bgp, 'spec.bgp');
        c.only(b, NODE_BGP_FIELDS, 'spec.bgp', NODE_BGP_REFUSED);
        const bgp: Obj = {};
        const v4 = c.str(b, 'ipv4Address', 'spec.bgp');
        if (v4 !== undefined) {
          if (c.cidr(v4.includes('/') ? v4 : `${v4}/32`, 'spec.bgp.ipv4Address', false).family !== 4)
            c.fail('spec.bgp.ipv4Address', `${v4} is not an IPv4 address`);
          bgp.ipv4Address = v4;
        }
        const v6 = c.str(b, 'ipv6Address', 'spec.bgp');
        if (v6 !== undefined) {
          if (c.cidr(v6.includes('/') ? v6 : `${v6}/128`, 'spec.bgp.ipv6Address', false).family !== 6)
            c.fail('spec.bgp.ipv6Address', `${v6} is not an IPv6 address`);
          bgp.ipv6Address = v6;
        }
        const as = c.int(b, 'asNumber', 'spec.bgp', 1, 4294967295);
        if (as !== undefined) bgp.asNumber = as;
        const rr = c.str(b, 'routeReflectorClusterID', 'spec.bgp');
        if (rr !== undefined && rr !== '') {
          if (c.ip(rr, 'spec.bgp.routeReflectorClusterID') !== 4)
            c.fail('spec.bgp.routeReflectorClusterID', 'must be an IPv4-formatted cluster ID');
          bgp.routeReflectorClusterID = rr;
        }
        out.bgp = bgp;
      }
      return out;
    }
    case 'IPPool': {
      c.only(s, IPPOOL_FIELDS, 'spec', IPPOOL_REFUSED);
      const cidr = c.str(s, 'cidr', 'spec', true)!;
      const net = c.cidr(cidr, 'spec.cidr');
      const [min, max] = net.family === 4 ? [20, 32] : [116, 128];
      const blockSize = c.int(s, 'blockSize', 'spec', 0, 128) ?? DEFAULT_BLOCK_SIZE[net.family];
      if (blockSize < min || blockSize > max)
        c.fail('spec.blockSize', `${blockSize} is out of range: IPv${net.family} block sizes go from ${min} to ${max}`);
      if (blockSize < net.prefixLength)
        c.fail('spec.blockSize', `/${blockSize} blocks do not fit in the /${net.prefixLength} pool ${cidr}`);
      const out: Obj = {
        cidr,
        blockSize,
        ipipMode: c.oneOf(s, 'ipipMode', 'spec', MODES, 'Never'),
        vxlanMode: c.oneOf(s, 'vxlanMode', 'spec', MODES, 'Never'),
      };
      if (out.ipipMode !== 'Never' && out.vxlanMode !== 'Never')
        c.fail('spec.vxlanMode', 'IPIP and VXLAN cannot both be enabled on one pool');
      if (net.family === 6 && out.ipipMode !== 'Never') c.fail('spec.ipipMode', 'IPIP is IPv4 only');
      const nat = c.bool(s, 'natOutgoing', 'spec');
      if (nat !== undefined) out.natOutgoing = nat;
      const dis = c.bool(s, 'disabled', 'spec');
      if (dis !== undefined) out.disabled = dis;
      const sel = c.selector(s, 'nodeSelector', 'spec');
      if (sel !== undefined) out.nodeSelector = sel;
      // Workload and Tunnel are what every podroute pool serves; LoadBalancer IPs are not allocated here.
      const uses = c.list(s, 'allowedUses', 'spec', 'a list of Workload, Tunnel');
      uses?.forEach((u, i) => {
        if (u === 'LoadBalancer')
          c.fail(`spec.allowedUses[${i}]`, 'LoadBalancer is not supported by podroute: it allocates no service addresses');
        if (u !== 'Workload' && u !== 'Tunnel') c.fail(`spec.allowedUses[${i}]`, `must be Workload or Tunnel, not ${JSON.stringify(u)}`);
      });
      if (uses !== undefined && !uses.includes('Workload'))
        c.fail('spec.allowedUses', 'a pool without Workload is not supported by podroute: every pool hands out pod addresses');
      const assignment = c.oneOf(s, 'assignmentMode', 'spec', ['Automatic', 'Manual'] as const, 'Automatic');
      if (assignment === 'Manual')
        c.fail(
          'spec.assignmentMode',
          'Manual is not supported by podroute: pods cannot ask for a pool by annotation, so every pool is Automatic',
        );
      return out;
    }
    case 'IPAMConfiguration': {
      if (name !== 'default') c.fail('metadata.name', 'the IPAMConfiguration must be named "default"');
      c.only(s, IPAM_CONFIGURATION_FIELDS, 'spec', IPAM_CONFIGURATION_REFUSED);
      const out: Obj = {};
      for (const k of ['strictAffinity', 'autoAllocateBlocks', 'releaseEmptyAffineBlocks']) {
        const v = c.bool(s, k, 'spec');
        if (v !== undefined) out[k] = v;
      }
      const m = c.int(s, 'maxBlocksPerHost', 'spec', 0, 1 << 30);
      if (m !== undefined) out.maxBlocksPerHost = m;
      return out;
    }
    case 'BGPConfiguration': {
      c.only(s, BGP_CONFIGURATION_FIELDS, 'spec', BGP_CONFIGURATION_REFUSED);
      const out: Obj = {};
      const as = c.int(s, 'asNumber', 'spec', 1, 4294967295);
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
      if (s.communities !== undefined && s.communities !== null) {
        if (!Array.isArray(s.communities)) c.fail('spec.communities', 'must be a list of {name, value}');
        out.communities = s.communities.map((e, i) => {
          const p = `spec.communities[${i}]`;
          const m = c.obj(e, p);
          c.only(m, ['name', 'value'], p);
          const value = c.str(m, 'value', p, true)!;
          if (!COMMUNITY_RE.test(value)) c.fail(`${p}.value`, `${JSON.stringify(value)} is not a community (aa:nn or aa:nn:mm)`);
          communityProblem(c, value, `${p}.value`);
          return { name: c.str(m, 'name', p, true)!, value };
        });
      }
      if (s.prefixAdvertisements !== undefined && s.prefixAdvertisements !== null) {
        if (!Array.isArray(s.prefixAdvertisements)) c.fail('spec.prefixAdvertisements', 'must be a list');
        out.prefixAdvertisements = s.prefixAdvertisements.map((e, i) => {
          const p = `spec.prefixAdvertisements[${i}]`;
          const m = c.obj(e, p);
          c.only(m, ['cidr', 'communities'], p);
          const cidr = c.str(m, 'cidr', p, true)!;
          c.cidr(cidr, `${p}.cidr`);
          const comms = m.communities ?? [];
          if (!Array.isArray(comms) || comms.some((x) => typeof x !== 'string'))
            c.fail(`${p}.communities`, 'must be a list of names or values');
          const named = new Set(((out.communities as { name: string }[] | undefined) ?? []).map((x) => x.name));
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
      return out;
    }
    case 'BGPPeer': {
      c.only(s, BGP_PEER_FIELDS, 'spec', BGP_PEER_REFUSED);
      const out: Obj = {};
      const peerIP = c.str(s, 'peerIP', 'spec');
      const ps = c.selector(s, 'peerSelector', 'spec');
      // Either one address (and its AS) or the nodes a selector picks (each with its own AS), as Calico.
      if (ps !== undefined && ps.trim() !== '') {
        if (peerIP) c.fail('spec.peerIP', 'set either peerIP or peerSelector, not both');
        if (s.asNumber !== undefined && s.asNumber !== null)
          c.fail('spec.asNumber', "must be empty with peerSelector: each picked node's own AS is used");
        out.peerSelector = ps;
      } else {
        if (!peerIP) c.fail('spec.peerIP', 'is required (or peerSelector, to peer with the nodes it picks)');
        checkPeerIP(c, peerIP, 'spec.peerIP');
        out.peerIP = peerIP;
        out.asNumber = c.int(s, 'asNumber', 'spec', 1, 4294967295, true);
      }
      const node = c.str(s, 'node', 'spec');
      if (node) out.node = node;
      const ns = c.selector(s, 'nodeSelector', 'spec');
      if (ns !== undefined) out.nodeSelector = ns;
      if (node && ns) c.fail('spec.nodeSelector', 'set either node or nodeSelector, not both');
      checkPeerSessionOptions(c, s, out);
      if (s.maxPrefixes !== undefined && s.maxPrefixes !== null)
        out.maxPrefixes = checkBgpPeerMaxPrefixes(c, s.maxPrefixes, 'spec.maxPrefixes');
      return out;
    }
    case 'FelixConfiguration':
      return checkFelixConfiguration(c, s, name);
    case 'WorkloadEndpoint': {
      const out: Obj = {
        node: c.str(s, 'node', 'spec', true),
        pod: c.str(s, 'pod', 'spec', true),
        interfaceName: c.str(s, 'interfaceName', 'spec', true),
      };
      if ((out.interfaceName as string).length > 15) c.fail('spec.interfaceName', 'Linux interface names are at most 15 characters');
      for (const k of ['orchestrator', 'workload', 'endpoint']) {
        const v = c.str(s, k, 'spec');
        if (v !== undefined) out[k] = v;
      }
      const mac = c.str(s, 'mac', 'spec');
      if (mac !== undefined) {
        if (!/^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$/.test(mac)) c.fail('spec.mac', `${JSON.stringify(mac)} is not a MAC address`);
        out.mac = mac.toLowerCase();
      }
      const nets = s.ipNetworks ?? [];
      if (!Array.isArray(nets)) c.fail('spec.ipNetworks', 'must be a list of CIDRs');
      out.ipNetworks = nets.map((n, i) => {
        c.cidr(n, `spec.ipNetworks[${i}]`, false);
        return n as string;
      });
      if (s.profiles !== undefined) {
        if (!Array.isArray(s.profiles) || s.profiles.some((x) => typeof x !== 'string')) c.fail('spec.profiles', 'must be a list of names');
        out.profiles = s.profiles;
      }
      const ports = c.list(s, 'ports', 'spec', 'a list of {name, protocol, port}');
      if (ports) {
        const seen = new Set<string>();
        out.ports = ports.map((x, i) => {
          const p = `spec.ports[${i}]`;
          const m = c.obj(x, p);
          c.only(m, ['name', 'protocol', 'port'], p);
          const portName = c.str(m, 'name', p, true)!;
          const why = portNameProblem(portName);
          if (why) c.fail(`${p}.name`, `${JSON.stringify(portName)} is not a port name: it ${why}`);
          if (seen.has(portName)) c.fail(`${p}.name`, `${portName} is named twice`);
          seen.add(portName);
          if (m.port === undefined || m.port === null) c.fail(`${p}.port`, 'is required');
          return {
            name: portName,
            protocol: c.oneOf(m, 'protocol', p, KUBERNETES_PROTOCOLS, 'TCP'),
            port: c.num(m.port, `${p}.port`, 1, 65535),
          };
        });
      }
      return out;
    }
    case 'Namespace':
      c.only(s, [], 'spec', { finalizers: 'is not supported by podroute: nothing finalizes a namespace here' });
      return {};
    case 'NetworkPolicy':
      return checkCalicoPolicy(c, s, false);
    case 'GlobalNetworkPolicy':
      return checkCalicoPolicy(c, s, true);
    case 'KubernetesNetworkPolicy':
      return checkKubernetesNetworkPolicy(c, s);
    case 'Service':
      return checkService(c, s);
    case 'EndpointSlice':
      return checkEndpointSlice(c, s);
    case 'IPAMBlock': {
      const cidr = c.str(s, 'cidr', 'spec', true)!;
      c.cidr(cidr, 'spec.cidr');
      return normalizeBlockSpec(s);
    }
    case 'IPAMHandle': {
      const block = s.block === undefined ? {} : c.obj(s.block, 'spec.block');
      return { handleID: c.str(s, 'handleID', 'spec') ?? name, block };
    }
  }
}

/**
 * Lua's cjson writes an empty array as {}; IPAM blocks written inside Redis come back
 * through here so both backends hand out the same shape.
 */
export function normalizeBlockSpec(s: Obj): IPAMBlockSpecShape {
  const arr = <T>(v: unknown): T[] => (Array.isArray(v) ? (v as T[]) : []);
  const out: IPAMBlockSpecShape = {
    cidr: s.cidr as string,
    affinity: typeof s.affinity === 'string' && s.affinity !== '' ? s.affinity : null,
    allocations: arr<number | null>(s.allocations),
    unallocated: arr<number>(s.unallocated),
    attributes: arr<{ handle_id: string | null; secondary: unknown }>(s.attributes).map((a) => ({
      handle_id: a.handle_id ?? null,
      secondary: isObj(a.secondary) ? (a.secondary as Record<string, string>) : {},
    })),
  };
  if (s.strictAffinity === true) out.strictAffinity = true;
  return out;
}
