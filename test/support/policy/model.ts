// The cluster as the policy tests see it, in Kubernetes' own shape: namespaces and pods with
// labels, container ports, and the probes of the matrix. Both the reference evaluators and the
// prober speak these types, so a truth table computed and a truth table measured compare key
// by key. Written from the Kubernetes API reference, independent of lib/resources.

export type Labels = Readonly<Record<string, string>>;

export type L4Protocol = 'TCP' | 'UDP' | 'SCTP';

export interface ModelNamespace {
  readonly name: string;
  readonly labels: Labels;
}

/** A pod's container port, as in a Pod spec: what a named port in a policy resolves to. */
export interface ContainerPort {
  readonly name?: string;
  readonly protocol: L4Protocol;
  readonly containerPort: number;
}

export interface ModelPod {
  readonly namespace: string;
  readonly name: string;
  readonly labels: Labels;
  readonly ip: string;
  readonly ports: readonly ContainerPort[];
}

export interface Model {
  readonly namespaces: readonly ModelNamespace[];
  readonly pods: readonly ModelPod[];
}

/** One column group of the matrix: a connection to this protocol and port. */
export interface Probe {
  readonly protocol: L4Protocol;
  readonly port: number;
}

export const podKey = (p: { namespace: string; name: string }): string => `${p.namespace}/${p.name}`;
export const probeKey = (p: Probe): string => `${p.protocol.toLowerCase()}/${p.port}`;

/** The container ports every matrix pod serves, named as Cyclonus names them. */
export const SERVED_PORTS: readonly ContainerPort[] = [
  { name: 'serve-80-tcp', protocol: 'TCP', containerPort: 80 },
  { name: 'serve-81-tcp', protocol: 'TCP', containerPort: 81 },
  { name: 'serve-80-udp', protocol: 'UDP', containerPort: 80 },
];

// ---- Kubernetes networking.k8s.io/v1 NetworkPolicy (the fields the API defines) ----

export interface LabelSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values?: readonly string[];
}

export interface LabelSelector {
  readonly matchLabels?: Labels;
  readonly matchExpressions?: readonly LabelSelectorRequirement[];
}

export interface IPBlock {
  readonly cidr: string;
  readonly except?: readonly string[];
}

export interface NetworkPolicyPeer {
  readonly podSelector?: LabelSelector;
  readonly namespaceSelector?: LabelSelector;
  readonly ipBlock?: IPBlock;
}

export interface NetworkPolicyPort {
  readonly protocol?: L4Protocol;
  readonly port?: number | string;
  readonly endPort?: number;
}

export interface NetworkPolicyIngressRule {
  readonly from?: readonly NetworkPolicyPeer[];
  readonly ports?: readonly NetworkPolicyPort[];
}

export interface NetworkPolicyEgressRule {
  readonly to?: readonly NetworkPolicyPeer[];
  readonly ports?: readonly NetworkPolicyPort[];
}

export type PolicyType = 'Ingress' | 'Egress';

export interface NetworkPolicy {
  readonly apiVersion: 'networking.k8s.io/v1';
  readonly kind: 'NetworkPolicy';
  readonly metadata: { readonly name: string; readonly namespace: string };
  readonly spec: {
    readonly podSelector: LabelSelector;
    readonly policyTypes?: readonly PolicyType[];
    readonly ingress?: readonly NetworkPolicyIngressRule[];
    readonly egress?: readonly NetworkPolicyEgressRule[];
  };
}

/** Kubernetes' label selector: every matchLabels pair and every expression must hold; `{}` selects all. */
export function labelSelectorMatches(selector: LabelSelector, labels: Labels): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const values = e.values ?? [];
    switch (e.operator) {
      case 'In':
        if (!has || !values.includes(labels[e.key]!)) return false;
        break;
      case 'NotIn':
        // A pod without the key is not in the set, so NotIn holds for it.
        if (has && values.includes(labels[e.key]!)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
    }
  }
  return true;
}
