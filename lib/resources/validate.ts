// Validation of a resource on its way into the store: its kind and metadata are checked, then
// its spec by its kind's validator (validate-<kind>.ts). Every error names the field
// (spec.cidr, metadata.name, ...) so a user can find the line in their YAML.
import { type Checker, type Obj, ValidationError } from './checker.js';
import { checkAdminNetworkPolicy, checkBaselineAdminNetworkPolicy } from './validate-admin-policy.js';
import { apiVersionOf, type Kind, type Resource } from './types.js';
import { checkBGPConfiguration } from './validate-bgp-configuration.js';
import { checkBGPPeer } from './validate-bgp-peer.js';
import { checkBGPFilter } from './validate-bgp-filter.js';
import { checkCalicoPolicy } from './validate-calico-policy.js';
import { checkFelixConfiguration } from './validate-felix.js';
import { checkIPAMBlock } from './validate-ipam-block.js';
import { checkIPAMConfiguration } from './validate-ipam-configuration.js';
import { checkIPAMHandle } from './validate-ipam-handle.js';
import { checkIPPool } from './validate-ip-pool.js';
import { checkKubernetesNetworkPolicy } from './validate-kubernetes.js';
import { checkMetadata } from './validate-metadata.js';
import { checkNamespace } from './validate-namespace.js';
import { checkNode, nodeBody } from './validate-node.js';
import { checkStagedCalicoPolicy, checkStagedKubernetesPolicy } from './validate-staged-policy.js';
import { checkTier } from './validate-tier.js';
import { checkEndpointSlice, checkService, kubernetesBody } from './validate-service.js';
import { checkWorkloadEndpoint } from './validate-workload-endpoint.js';

export { ValidationError };

interface KindValidator {
  /** The spec checked, Calico's (or Kubernetes') defaults filled, as a clean copy. */
  spec(c: Checker, spec: Obj, name: string): unknown;
  /** Where the spec is read from, for kinds that keep fields beside `spec`; else `spec` itself. */
  body?(c: Checker, document: Obj): Obj;
}

const VALIDATORS: { readonly [K in Kind]: KindValidator } = {
  Node: { spec: checkNode, body: nodeBody },
  IPPool: { spec: checkIPPool },
  IPAMBlock: { spec: checkIPAMBlock },
  IPAMHandle: { spec: checkIPAMHandle },
  IPAMConfiguration: { spec: checkIPAMConfiguration },
  BGPConfiguration: { spec: checkBGPConfiguration },
  BGPPeer: { spec: checkBGPPeer },
  BGPFilter: { spec: checkBGPFilter },
  FelixConfiguration: { spec: checkFelixConfiguration },
  WorkloadEndpoint: { spec: checkWorkloadEndpoint },
  Namespace: { spec: checkNamespace },
  Tier: { spec: checkTier },
  NetworkPolicy: { spec: (c, s) => checkCalicoPolicy(c, s, false) },
  GlobalNetworkPolicy: { spec: (c, s) => checkCalicoPolicy(c, s, true) },
  KubernetesNetworkPolicy: { spec: checkKubernetesNetworkPolicy },
  AdminNetworkPolicy: { spec: checkAdminNetworkPolicy },
  BaselineAdminNetworkPolicy: { spec: checkBaselineAdminNetworkPolicy },
  StagedNetworkPolicy: { spec: (c, s) => checkStagedCalicoPolicy(c, s, false) },
  StagedGlobalNetworkPolicy: { spec: (c, s) => checkStagedCalicoPolicy(c, s, true) },
  StagedKubernetesNetworkPolicy: { spec: checkStagedKubernetesPolicy },
  Service: { spec: checkService, body: (c, o) => kubernetesBody(c, 'Service', o) },
  EndpointSlice: { spec: checkEndpointSlice, body: (c, o) => kubernetesBody(c, 'EndpointSlice', o) },
};

/**
 * Checks a resource read from YAML/JSON or passed by a caller, fills Calico's defaults
 * (IPPool block size and encapsulation modes), and returns a clean copy.
 */
export function validateResource(input: unknown): Resource {
  const { kind, metadata, document, checker } = checkMetadata(input);
  const validator = VALIDATORS[kind];
  const body = validator.body ? validator.body(checker, document) : specOf(checker, document);
  return { apiVersion: apiVersionOf(kind), kind, metadata, spec: validator.spec(checker, body, metadata.name) } as Resource;
}

function specOf(c: Checker, document: Obj): Obj {
  return document.spec === undefined || document.spec === null ? {} : c.obj(document.spec, 'spec');
}
