// What policy needs of a WorkloadEndpoint and of a Namespace: the labels selectors see, the
// addresses a set holds, the named ports. Like Calico, an endpoint also carries the labels
// `projectcalico.org/namespace` and `projectcalico.org/orchestrator`, and a namespace the labels
// `kubernetes.io/metadata.name` (which Kubernetes sets on every namespace) and
// `projectcalico.org/name`, so selectors can name them without anyone writing them.
import { formatAddress, parseInterfaceAddress } from '../../ip/index.js';
import { type Labels, LABEL_NAMESPACE, LABEL_ORCHESTRATOR, NAMESPACE_NAME_LABEL, type WorkloadEndpoint } from '../resources/index.js';

/** Calico's label for a namespace's name, as its namespace profiles carry it. */
export const CALICO_NAME_LABEL = 'projectcalico.org/name';

export interface WorkloadPort {
  readonly name: string;
  readonly protocol: 'tcp' | 'udp' | 'sctp';
  readonly port: number;
}

export interface Workload {
  /** The WorkloadEndpoint's datastore key, `namespace/name`. */
  readonly key: string;
  readonly namespace: string;
  readonly pod: string;
  readonly node: string;
  readonly iface: string;
  /** Bare addresses, canonical text. */
  readonly addresses: readonly string[];
  readonly labels: Labels;
  readonly ports: readonly WorkloadPort[];
}

export function workloadOf(w: WorkloadEndpoint): Workload {
  const namespace = w.metadata.namespace ?? 'default';
  const ports: WorkloadPort[] = [];
  for (const p of w.spec.ports ?? []) {
    ports.push({ name: p.name, protocol: (p.protocol ?? 'TCP').toLowerCase() as WorkloadPort['protocol'], port: p.port });
  }
  return {
    key: `${namespace}/${w.metadata.name}`,
    namespace,
    pod: w.spec.pod,
    node: w.spec.node,
    iface: w.spec.interfaceName,
    addresses: w.spec.ipNetworks.map((n, i) => formatAddress(parseInterfaceAddress(n, `spec.ipNetworks[${i}]`).bytes)),
    labels: { ...w.metadata.labels, [LABEL_NAMESPACE]: namespace, [LABEL_ORCHESTRATOR]: w.spec.orchestrator ?? 'k8s' },
    ports,
  };
}

/** A namespace's labels as selectors see them; a namespace with no resource has only its name. */
export function namespaceLabels(name: string, labels?: Readonly<Record<string, string>>): Labels {
  return { ...labels, [NAMESPACE_NAME_LABEL]: name, [CALICO_NAME_LABEL]: name };
}
