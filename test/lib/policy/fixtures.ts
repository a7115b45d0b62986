// Small builders for the resources the calculation graph reads, so each test states only
// what it is about.
import type {
  CalicoNetworkPolicy,
  CalicoNetworkPolicySpec,
  GlobalNetworkPolicy,
  GlobalNetworkPolicySpec,
  IPPool,
  KubernetesNetworkPolicy,
  KubernetesNetworkPolicySpec,
  Namespace,
  Tier,
  WorkloadEndpoint,
  WorkloadEndpointPort,
} from '../../../lib/resources/index.js';

export function namespace(name: string, labels: Record<string, string> = {}): Namespace {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels }, spec: {} };
}

export interface PodOptions {
  node?: string;
  ports?: WorkloadEndpointPort[];
  addresses?: string[];
}

/** A pod's WorkloadEndpoint: interface `cali-<ns>-<pod>`, address given bare. */
export function pod(ns: string, name: string, address: string, labels: Record<string, string> = {}, o: PodOptions = {}): WorkloadEndpoint {
  const node = o.node ?? 'n1';
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: { name: `${node}-k8s-${name}-eth0`, namespace: ns, labels },
    spec: {
      orchestrator: 'k8s',
      node,
      pod: name,
      endpoint: 'eth0',
      interfaceName: `cali-${ns}-${name}`,
      ipNetworks: o.addresses ?? [`${address}/32`],
      ...(o.ports ? { ports: o.ports } : {}),
    },
  };
}

export function knp(ns: string, name: string, spec: Partial<KubernetesNetworkPolicySpec>): KubernetesNetworkPolicy {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'KubernetesNetworkPolicy',
    metadata: { name, namespace: ns },
    spec: { podSelector: {}, policyTypes: [], ...spec },
  };
}

export function cnp(ns: string, name: string, spec: Partial<CalicoNetworkPolicySpec>): CalicoNetworkPolicy {
  return { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name, namespace: ns }, spec: { types: [], ...spec } };
}

export function gnp(name: string, spec: Partial<GlobalNetworkPolicySpec>): GlobalNetworkPolicy {
  return { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy', metadata: { name }, spec: { types: [], ...spec } };
}

export function pool(name: string, cidr: string, natOutgoing?: boolean): IPPool {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'IPPool',
    metadata: { name },
    spec: { cidr, blockSize: 26, ipipMode: 'Never', vxlanMode: 'Never', ...(natOutgoing !== undefined ? { natOutgoing } : {}) },
  };
}

/** An endpoint's tier as the calculation graph gives it: the default tier (order 1000000, Deny) unless named. */
export function inTier(policies: string[], name = 'default', defaultAction: 'Deny' | 'Pass' = 'Deny') {
  return { name, policies, defaultAction };
}

/** A projectcalico.org/v3 Tier. */
export function tier(name: string, spec: { order?: number; defaultAction?: 'Deny' | 'Pass' }): Tier {
  return { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name }, spec: { defaultAction: 'Deny', ...spec } };
}
