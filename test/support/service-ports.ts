// Service ports for the tests that need a services table of some size and variety: each port has
// a ClusterIP of each family and a NodePort, its first endpoint local, and every third one
// client affinity; `externalLocal` adds externalTrafficPolicy Local to every fourth from the second.
import type { ServicePort } from '../../felix/services/input.js';

export interface ServicePortOptions {
  /** Shifts the endpoints' addresses by this many: the same port after its endpoints moved. */
  moved?: number;
  /** Ports 1, 5, 9, … send outside traffic only to local endpoints. */
  externalLocal?: boolean;
}

/** Port `i` (default/svc<i>, tcp 80, NodePort 30000 + i) with `endpoints` endpoints in 10.65.<i>.0/24. */
export function servicePort(i: number, endpoints: number, options: ServicePortOptions = {}): ServicePort {
  const moved = options.moved ?? 0;
  return {
    id: `default/svc${i}/http/tcp`,
    protocol: 'tcp',
    port: 80,
    clusterIPs: [`10.96.0.${i + 1}`, `fd00:96::${i + 1}`],
    nodePort: 30000 + i,
    externalIPs: [],
    loadBalancerIPs: [],
    endpoints: Array.from({ length: endpoints }, (_, j) => ({ address: `10.65.${i}.${j + 2 + moved}`, port: 8080, local: j === 0 })),
    ...(i % 3 === 0 ? { affinityTimeoutSeconds: 600 } : {}),
    ...(options.externalLocal && i % 4 === 1 ? { externalLocal: true } : {}),
  };
}
