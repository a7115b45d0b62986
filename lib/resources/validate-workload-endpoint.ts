// WorkloadEndpoint: a pod's interface on a node, as the CNI plugin writes it (node, pod,
// interface, addresses, MAC) and the named ports policies refer to.
import type { Checker, Obj } from './checker.js';
import { KUBERNETES_PROTOCOLS, portNameProblem } from './validate-kubernetes.js';

export function checkWorkloadEndpoint(c: Checker, s: Obj): Obj {
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
  if (ports) out.ports = checkPorts(c, ports);
  return out;
}

/** spec.ports: named ports, each name once, as a pod's containers declare them. */
function checkPorts(c: Checker, ports: unknown[]): Obj[] {
  const seen = new Set<string>();
  return ports.map((x, i) => {
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
