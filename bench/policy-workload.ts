// The policy benchmark's cluster: namespaces, pods (WorkloadEndpoints) spread over nodes with a
// block of addresses each, and Kubernetes NetworkPolicies in ten shapes people write (default
// deny, pod and namespace selectors, both in one peer, ipBlock with except, named ports, port
// ranges, matchExpressions, egress). Seeded, so two runs build the same cluster. One node is
// "ours": its pods get endpoint chains; everyone else's only appear as set members.
import { createHash } from 'node:crypto';
import { formatIpv4Number } from '../ip/index.js';
import type {
  KubernetesNetworkPolicy,
  LabelSelector,
  Namespace,
  NetworkPolicyPort,
  Resource,
  WorkloadEndpoint,
} from '../lib/resources/index.js';
import { validateResource } from '../lib/resources/index.js';
import { prng } from '../test/support/prng.js';

export const LOCAL_NODE = 'node-000';
export const POOL_CIDR = '10.64.0.0/10';
const POOL_BASE = (10 << 24) | (64 << 16);

export interface WorkloadShape {
  readonly policies: number;
  readonly endpoints: number;
  /** Pods on our node; the others are spread evenly over as many nodes of this size. */
  readonly local: number;
  readonly namespaces: number;
  readonly seed: number;
}

/** How the ten policy shapes are named in the report. */
export const POLICY_SHAPES = [
  'default-deny ingress (podSelector {})',
  'from pods of an app in the namespace, TCP 8080',
  'from namespaces of a team (namespaceSelector), TCP 80, 443',
  'from app-9 pods in prod namespaces (both selectors, AND), named port metrics',
  'from an ipBlock with except, TCP 443',
  'egress to db pods TCP 5432 and to namespace ns-000 UDP/TCP 53',
  'from web pods, TCP 30000..30000+k (endPort)',
  'matchExpressions: tier In (web, api) from env NotIn (dev), UDP 5353',
  'ingress from an app and egress to 10.0.0.0/8 except the pool, TCP 443',
  'from every pod of the namespace (podSelector {} peer)',
] as const;

const TIERS = ['web', 'api', 'db'] as const;
const ENVS = ['prod', 'staging', 'dev'] as const;

const nsName = (i: number): string => `ns-${String(i).padStart(3, '0')}`;
const nodeName = (i: number): string => `node-${String(i).padStart(3, '0')}`;

/** Calico's host-side interface name: `cali` and 11 hex digits of a hash of namespace.pod. */
export function caliIface(namespace: string, pod: string): string {
  return `cali${createHash('sha1').update(`${namespace}.${pod}`).digest('hex').slice(0, 11)}`;
}

export interface PodLabels {
  readonly app: string;
  readonly tier: string;
  readonly version: string;
}

function podLabels(app: number, version: number): PodLabels {
  return { app: `app-${app}`, tier: TIERS[app % 3]!, version: `v${version}` };
}

function firstPort(spec: KubernetesNetworkPolicy['spec']): NetworkPolicyPort | undefined {
  return spec.ingress?.[0]?.ports?.[0] ?? spec.egress?.[0]?.ports?.[0];
}

export class PolicyWorkload {
  readonly namespaces: Namespace[] = [];
  readonly pods: WorkloadEndpoint[] = [];
  readonly policies: KubernetesNetworkPolicy[] = [];
  readonly nodes: number;
  private readonly random: () => number;
  private readonly blockSize: number;
  private readonly used: number[];
  /** Each node's slots taken by the cluster's own pods: the pods added later cycle through the rest. */
  private readonly initial: number[];
  private serial = 0;

  constructor(readonly shape: WorkloadShape) {
    this.random = prng(shape.seed);
    this.nodes = Math.max(1, Math.ceil(shape.endpoints / Math.max(1, shape.local)));
    // Each node's block holds its pods and room for the ones the benchmark adds.
    this.blockSize = 2 ** Math.ceil(Math.log2(Math.max(shape.local, Math.ceil(shape.endpoints / this.nodes)) + 512));
    if (this.nodes * this.blockSize > 1 << 22) throw new Error(`${shape.endpoints} endpoints do not fit the pool ${POOL_CIDR}`);
    this.used = new Array(this.nodes).fill(0);
    for (let i = 0; i < shape.namespaces; i++) {
      this.namespaces.push(
        validateResource({
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name: nsName(i), labels: { team: `t${i % 10}`, env: ENVS[i % 3] } },
          spec: {},
        }) as Namespace,
      );
    }
    // Our node's pods first, then the others round-robin over the remaining nodes.
    for (let i = 0; i < shape.endpoints; i++) {
      const node = i < shape.local ? 0 : this.nodes === 1 ? 0 : 1 + ((i - shape.local) % (this.nodes - 1));
      this.pods.push(this.newPod(node));
    }
    this.initial = [...this.used];
    for (let g = 0; g < shape.policies; g++) this.policies.push(this.policy(g, g % shape.namespaces, Math.floor(g / shape.namespaces)));
  }

  /** Every resource, namespaces first (as a watch delivers a namespace before its pods). */
  resources(): Resource[] {
    return [...this.namespaces, ...this.pods, ...this.policies];
  }

  private pick(n: number): number {
    return Math.floor(this.random() * n);
  }

  /**
   * A new pod on node `node` (0 is ours), in a random namespace with random labels. Once the
   * cluster is built, the pods added take the block's spare addresses in turn, from the first
   * again when they run out (an address is reused as IPAM reuses a freed one): a caller keeps
   * fewer of them at once than the block has spare, as the benchmarks, which delete each pod they
   * add before the next, do.
   */
  newPod(node: number): WorkloadEndpoint {
    const ns = nsName(this.pick(this.shape.namespaces));
    const labels = podLabels(this.pick(10), 1 + this.pick(2));
    const pod = `pod-${this.serial++}`;
    if (this.initial && this.used[node]! >= this.blockSize - 2) this.used[node] = this.initial[node]!;
    const slot = this.used[node]!++;
    if (slot >= this.blockSize - 2) throw new Error(`node ${nodeName(node)}'s block is full`);
    const address = formatIpv4Number(POOL_BASE + node * this.blockSize + 1 + slot);
    const ports = [{ name: 'metrics', protocol: 'TCP', port: 9090 }];
    if (labels.tier === 'web') ports.push({ name: 'http', protocol: 'TCP', port: 8080 });
    return validateResource({
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: { name: `${nodeName(node)}-k8s-${pod}-eth0`, namespace: ns, labels: { ...labels } },
      spec: {
        orchestrator: 'k8s',
        node: nodeName(node),
        pod,
        endpoint: 'eth0',
        interfaceName: caliIface(ns, pod),
        ipNetworks: [`${address}/32`],
        ports,
      },
    }) as WorkloadEndpoint;
  }

  /** The same pod with another app label (so other sets hold it). */
  relabel(w: WorkloadEndpoint): WorkloadEndpoint {
    const app = Number((w.metadata.labels?.app ?? 'app-0').slice(4));
    const labels = podLabels((app + 1 + this.pick(9)) % 10, 1 + this.pick(2));
    return { ...w, metadata: { ...w.metadata, labels: { ...labels } } };
  }

  /** Whether editPort can edit the policy: its first rule with ports starts with a port number. */
  hasNumericPort(p: KubernetesNetworkPolicy): boolean {
    return typeof firstPort(p.spec)?.port === 'number';
  }

  /** The same policy with its first rule's first port moved (a rule edited, its peers unchanged). */
  editPort(p: KubernetesNetworkPolicy, step: number): KubernetesNetworkPolicy {
    const spec = structuredClone(p.spec);
    const port = firstPort(spec);
    if (!port || typeof port.port !== 'number') throw new Error(`policy ${p.metadata.name} has no numeric port to edit`);
    port.port = 8080 + (step % 2 === 0 ? 1 : 0);
    return { ...p, spec };
  }

  /** The same policy with its first rule's first port moved from where it is now (8081, or back to 8080): an edit always changes it. */
  movePort(p: KubernetesNetworkPolicy): KubernetesNetworkPolicy {
    return this.editPort(p, firstPort(p.spec)?.port === 8081 ? 1 : 0);
  }

  private policy(g: number, ns: number, k: number): KubernetesNetworkPolicy {
    // Shapes rotate within each namespace, so every namespace holds every shape.
    const shape = (g + k) % POLICY_SHAPES.length;
    const app = (): LabelSelector => ({ matchLabels: { app: `app-${this.pick(10)}` } });
    const tcp = (port: number | string) => ({ protocol: 'TCP', port });
    let spec: Record<string, unknown>;
    switch (shape) {
      case 0:
        spec = { podSelector: {}, policyTypes: ['Ingress'] };
        break;
      case 1:
        spec = { podSelector: app(), ingress: [{ from: [{ podSelector: app() }], ports: [tcp(8080)] }] };
        break;
      case 2:
        spec = {
          podSelector: app(),
          ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: `t${this.pick(10)}` } } }], ports: [tcp(80), tcp(443)] }],
        };
        break;
      case 3:
        spec = {
          podSelector: app(),
          ingress: [
            {
              from: [{ namespaceSelector: { matchLabels: { env: 'prod' } }, podSelector: { matchLabels: { app: 'app-9' } } }],
              ports: [tcp('metrics')],
            },
          ],
        };
        break;
      case 4:
        spec = {
          podSelector: { matchLabels: { tier: 'web' } },
          ingress: [{ from: [{ ipBlock: { cidr: '172.16.0.0/12', except: [`172.16.${this.pick(256)}.0/24`] } }], ports: [tcp(443)] }],
        };
        break;
      case 5:
        spec = {
          podSelector: app(),
          policyTypes: ['Egress'],
          egress: [
            { to: [{ podSelector: { matchLabels: { tier: 'db' } } }], ports: [tcp(5432)] },
            {
              to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': nsName(0) } } }],
              ports: [{ protocol: 'UDP', port: 53 }, tcp(53)],
            },
          ],
        };
        break;
      case 6:
        spec = {
          podSelector: app(),
          ingress: [
            { from: [{ podSelector: { matchLabels: { tier: 'web' } } }], ports: [{ protocol: 'TCP', port: 30000, endPort: 30001 + k }] },
          ],
        };
        break;
      case 7:
        spec = {
          podSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['web', 'api'] }] },
          ingress: [
            {
              from: [{ namespaceSelector: { matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] } }],
              ports: [{ protocol: 'UDP', port: 5353 }],
            },
          ],
        };
        break;
      case 8:
        spec = {
          podSelector: app(),
          policyTypes: ['Ingress', 'Egress'],
          ingress: [{ from: [{ podSelector: app() }] }],
          egress: [{ to: [{ ipBlock: { cidr: '10.0.0.0/8', except: [POOL_CIDR] } }], ports: [tcp(443)] }],
        };
        break;
      default:
        spec = { podSelector: {}, ingress: [{ from: [{ podSelector: {} }] }] };
    }
    return validateResource({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: `np-${shape}-${k}`, namespace: nsName(ns) },
      spec,
    }) as KubernetesNetworkPolicy;
  }
}
