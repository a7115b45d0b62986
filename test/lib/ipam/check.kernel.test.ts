// The kernel half of `ipam check` on its own: a node's endpoints against what its kernel holds
// (as the CNI plugin's reader gives it), with no kernel of our own.
import assert from 'node:assert/strict';
import { checkIpam, checkKernel, formatIpamCheck, type KernelEnd } from '../../../lib/ipam/index.js';
import { API_VERSION, CONTAINER_ID_ANNOTATION, type WorkloadEndpoint } from '../../../lib/resources/index.js';

const wep = (name: string, node: string, iface: string, ips: string[]): WorkloadEndpoint => ({
  apiVersion: API_VERSION,
  kind: 'WorkloadEndpoint',
  metadata: { name, namespace: 'web', annotations: { [CONTAINER_ID_ANNOTATION]: `ctr-${name}` } },
  spec: { node, pod: name, workload: `ctr-${name}`, interfaceName: iface, ipNetworks: ips },
});

describe('ipam check: endpoints against the kernel', () => {
  const weps = [
    wep('whole', 'n1', 'caliwhole', ['10.1.0.1/32', '2001:db8::1/128']),
    wep('noif', 'n1', 'calinoif', ['10.1.0.2/32']),
    wep('noaddr', 'n1', 'calinoaddr', ['10.1.0.3/32']),
    wep('taken', 'n1', 'calitaken', ['10.1.0.4/32']),
    wep('unnamed', 'n1', 'caliunnamed', ['10.1.0.5/32']),
    wep('elsewhere', 'n2', 'calielse', ['10.1.0.6/32']),
  ];
  const ends = new Map<string, KernelEnd>([
    // The kernel writes IPv6 in its own form; the comparison is by address.
    ['caliwhole', { owner: 'ctr-whole', podAddresses: ['10.1.0.1/32', '2001:db8:0::1/128'] }],
    ['calinoaddr', { podAddresses: [] }],
    ['calitaken', { owner: 'ctr-other', podAddresses: ['10.1.0.4/32'] }],
    ['caliunnamed', { owner: 'ctr-unnamed' }],
  ]);

  it("compares only that node's endpoints, and names each one the kernel lacks", () => {
    const k = checkKernel(weps, 'n1', ends);
    assert.equal(k.endpoints, 5);
    assert.deepEqual(
      k.missingInterface.map((m) => m.interfaceName),
      ['calinoif'],
    );
    assert.deepEqual(
      k.missingAddresses.map((m) => [m.interfaceName, m.missing]),
      [['calinoaddr', ['10.1.0.3/32']]],
    );
    assert.deepEqual(
      k.otherOwner.map((o) => [o.interfaceName, o.container, o.owner]),
      [['calitaken', 'ctr-taken', 'ctr-other']],
    );
    assert.deepEqual(
      k.unread.map((u) => u.interfaceName),
      ['caliunnamed'],
    );
  });

  it('fails the check on any of them, and says the sandbox is what brings them back', () => {
    const r = checkIpam([], weps, [], { node: 'n1', ends });
    assert.equal(r.ok, false, 'kernel problems fail the check');
    const text = formatIpamCheck(r);
    assert.match(text, /kernel: 5 endpoints of node n1 compared with this host's interfaces/);
    assert.match(text, /missing interface: WorkloadEndpoint web\/noif names calinoif, which this host does not have/);
    assert.match(text, /missing addresses: WorkloadEndpoint web\/noaddr: 10\.1\.0\.3\/32 not on the pod end of calinoaddr \(it has none\)/);
    assert.match(
      text,
      /interface of another sandbox: calitaken of WorkloadEndpoint web\/taken is marked as container ctr-other's, not ctr-taken's/,
    );
    assert.match(text, /not compared: the pod ends of caliunnamed are in namespaces this host has no name for/);
    assert.match(text, /problems found: .*an endpoint the kernel lacks comes back when its pod's sandbox is recreated/);
    // Only unread ends: nothing is known to be wrong.
    const unread = checkKernel([weps[4]!], 'n1', ends);
    assert.equal(
      unread.missingInterface.length + unread.missingAddresses.length + unread.otherOwner.length,
      0,
      'an end that could not be read is no problem found',
    );
  });
});
