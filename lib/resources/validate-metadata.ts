// What every document carries before its spec: its kind (and the apiVersion that goes with it)
// and its metadata (name, namespace, labels, annotations, revision), by the rules each kind's
// API applies to them.
import { Checker, type Obj } from './checker.js';
import {
  API_VERSION,
  API_VERSION_K8S_NETWORKING,
  API_VERSION_OWN,
  apiVersionOf,
  KINDS,
  manifestKind,
  NAMESPACE_NAME_LABEL,
  NAMESPACED_KINDS,
  type Kind,
  type ObjectMeta,
} from './types.js';

const NAME_RE = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** Kinds whose labels policies select on, held to Kubernetes' label rules. */
const STRICT_LABEL_KINDS: readonly Kind[] = [
  'Namespace',
  'WorkloadEndpoint',
  'NetworkPolicy',
  'GlobalNetworkPolicy',
  'KubernetesNetworkPolicy',
  'AdminNetworkPolicy',
  'BaselineAdminNetworkPolicy',
  'StagedNetworkPolicy',
  'StagedGlobalNetworkPolicy',
  'StagedKubernetesNetworkPolicy',
  'Service',
  'EndpointSlice',
];
/** Kinds of Kubernetes' own API groups: their apiVersion is the one Kubernetes gives them. */
const KUBERNETES_KINDS: readonly Kind[] = [
  'KubernetesNetworkPolicy',
  'AdminNetworkPolicy',
  'BaselineAdminNetworkPolicy',
  'Namespace',
  'Service',
  'EndpointSlice',
];
const CALICO_API_VERSIONS: readonly unknown[] = [API_VERSION, API_VERSION_OWN, 'crd.projectcalico.org/v1'];

/** A document whose kind and metadata are checked, with the checker that names it in every later failure. */
export interface CheckedMetadata {
  kind: Kind;
  metadata: ObjectMeta;
  document: Obj;
  checker: Checker;
}

export function checkMetadata(input: unknown): CheckedMetadata {
  // Until the name is known, failures name only the field.
  const pre = new Checker(undefined);
  const document = pre.obj(input, '(document)');
  const kind = checkKind(pre, document);
  const md = pre.obj(document.metadata, 'metadata');
  const name = pre.str(md, 'name', 'metadata', true)!;
  const checker = new Checker(`${manifestKind(kind)}/${name}`);
  return { kind, metadata: checkObjectMeta(checker, kind, md, name), document, checker };
}

function checkKind(c: Checker, o: Obj): Kind {
  const given = o.kind;
  if (typeof given !== 'string' || given === '') c.fail('kind', 'is required');
  // Kubernetes' NetworkPolicy and Calico's share a kind name; the apiVersion tells them apart.
  const kind = given === 'NetworkPolicy' && o.apiVersion === API_VERSION_K8S_NETWORKING ? 'KubernetesNetworkPolicy' : given;
  if (!(KINDS as readonly string[]).includes(kind))
    c.fail('kind', `unknown kind ${JSON.stringify(kind)} (known: ${KINDS.map(manifestKind).join(', ')})`);
  checkApiVersion(c, kind as Kind, o.apiVersion);
  return kind as Kind;
}

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

function checkObjectMeta(c: Checker, kind: Kind, md: Obj, name: string): ObjectMeta {
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
  } else if (NAMESPACED_KINDS.includes(kind)) {
    // As kubectl and calicoctl do, a policy without a namespace goes to "default".
    metadata.namespace = ns || 'default';
    if (metadata.namespace.length > 63 || !DNS_LABEL.test(metadata.namespace))
      c.fail('metadata.namespace', `${JSON.stringify(ns)} is not a namespace name (at most 63 lower-case letters, digits and '-')`);
  } else if (ns) c.fail('metadata.namespace', `${kind} is not namespaced`);
  const labels = STRICT_LABEL_KINDS.includes(kind) ? c.strictLabels(md, 'labels', 'metadata') : c.labels(md, 'labels', 'metadata');
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
  return metadata;
}
