import assert from 'node:assert/strict';
import { blockAddress, blockName } from '../../../lib/ipam/index.js';
import { ValidationError, formatResources, parseResources, parseSelector, validateResource } from '../../../lib/resources/index.js';

const bad = (yaml: string, field: RegExp | string): void => {
  assert.throws(
    () => parseResources(yaml),
    (e: unknown) => {
      assert.ok(e instanceof ValidationError, String(e));
      if (typeof field === 'string') assert.equal(e.field, field, e.message);
      else assert.match(e.message, field);
      return true;
    },
  );
};

describe('resources: validation and YAML', () => {
  it('reads the YAML a Calico user writes, several documents and lists, and writes it back', () => {
    const text = `
apiVersion: projectcalico.org/v3
kind: IPPool
metadata:
  name: default-ipv4-ippool
spec:
  cidr: 192.168.0.0/16
  ipipMode: CrossSubnet
  natOutgoing: true
  nodeSelector: all()
---
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: default}
spec:
  nodeToNodeMeshEnabled: false
  asNumber: 63400
  serviceClusterIPs: [{cidr: 10.96.0.0/12}]
  communities: [{name: bgp-large-community, value: '63400:300:100'}]
---
apiVersion: podroute.io/v1
kind: List
items:
- kind: BGPPeer
  metadata: {name: rack1-tor}
  spec: {peerIP: 192.20.30.40, asNumber: 64567, nodeSelector: "rack == 'rack-1'", keepOriginalNextHop: true, maxRestartTime: 120s}
- kind: Node
  metadata: {name: node1, labels: {rack: rack-1}}
  spec: {bgp: {ipv4Address: 10.0.0.1/24, ipv6Address: 'fd00::1/64', asNumber: 64512, routeReflectorClusterID: 224.0.0.1}}
`;
    const rs = parseResources(text);
    assert.deepEqual(
      rs.map((r) => r.kind),
      ['IPPool', 'BGPConfiguration', 'BGPPeer', 'Node'],
    );
    const p = rs[0]!;
    assert.ok(p.kind === 'IPPool', `first resource is ${p.kind}, not IPPool`);
    assert.deepEqual(p.spec, {
      cidr: '192.168.0.0/16',
      blockSize: 26,
      ipipMode: 'CrossSubnet',
      vxlanMode: 'Never',
      natOutgoing: true,
      nodeSelector: 'all()',
    });
    assert.ok(
      rs.every((r) => r.apiVersion === 'projectcalico.org/v3'),
      'we emit projectcalico.org/v3',
    );
    assert.deepEqual(parseResources(formatResources(rs)), rs);
    assert.match(formatResources([p]), /^apiVersion: projectcalico.org\/v3\nkind: IPPool\n/);
  });

  it('refuses bad input with a message naming the field', () => {
    bad('kind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.0.0.0/33}', 'spec.cidr');
    bad('kind: IPPool\nmetadata: {name: p}\nspec: {cidr: banana}', /document 1 \(IPPool\/p\): spec\.cidr: "banana" is not a CIDR/);
    bad(
      'kind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.0.0.1/16}',
      /spec\.cidr: 10\.0\.0\.1\/16 has host bits set; did you mean 10\.0\.0\.0\/16/,
    );
    bad(
      'kind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.0.0.0/16, blockSize: 33}',
      /spec\.blockSize: 33 is out of range: IPv4 block sizes go from 20 to 32/,
    );
    bad('kind: IPPool\nmetadata: {name: p}\nspec: {cidr: "fd00::/64", blockSize: 26}', /spec\.blockSize: 26 is out of range: IPv6/);
    bad(
      'kind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.0.0.0/16, ipipMode: Sometimes}',
      /spec\.ipipMode: must be one of Never, Always, CrossSubnet/,
    );
    bad('kind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.0.0.0/16, nodeSelector: "rack =="}', 'spec.nodeSelector');
    bad('---\nkind: Node\nmetadata: {name: ok}\n---\nkind: Gateway\nmetadata: {name: g}', /document 2: kind: unknown kind "Gateway"/);
    bad('kind: Node\nmetadata: {name: Bad_Name}', 'metadata.name');
    bad('kind: BGPPeer\nmetadata: {name: x}\nspec: {peerIP: 1.2.3, asNumber: 1}', 'spec.peerIP');
    bad('kind: BGPPeer\nmetadata: {name: x}\nspec: {peerIP: 1.2.3.4, asNumber: 4294967296}', 'spec.asNumber');
    bad('kind: BGPPeer\nmetadata: {name: x}\nspec: {peerIP: 1.2.3.4, asNumber: 1, maxRestartTime: soon}', 'spec.maxRestartTime');
    bad('kind: BGPConfiguration\nmetadata: {name: default}\nspec: {listenPort: 70000}', 'spec.listenPort');
    bad(
      'kind: BGPConfiguration\nmetadata: {name: default}\nspec: {communities: [{name: c, value: "70000:1"}]}',
      'spec.communities[0].value',
    );
    bad('kind: WorkloadEndpoint\nmetadata: {name: w, namespace: ns}\nspec: {node: n, pod: p, interfaceName: cali0, mac: zz}', 'spec.mac');
    bad('kind: WorkloadEndpoint\nmetadata: {name: w}\nspec: {node: n, pod: p, interfaceName: cali0}', 'metadata.namespace');
    bad('kind: Node\nmetadata: {name: n}\nspec: {bgp: {ipv4Address: 10.0.0.300/24}}', 'spec.bgp.ipv4Address');
    bad('kind: IPPool\nmetadata: {name: p}\nspec: {cidr: [oops', '(yaml)');
    assert.throws(() => validateResource({ kind: 'IPPool', apiVersion: 'v9', metadata: { name: 'p' } }), /apiVersion/);
  });

  it('reads and prints addresses by the one set of rules (ip/), for both families', () => {
    // Printed: IPv6 canonically (RFC 5952), IPv4-mapped in mixed notation (§5), in the hint
    // for a pool with host bits as in the addresses IPAM hands out.
    bad(
      'kind: IPPool\nmetadata: {name: p}\nspec: {cidr: "fd00:0:0:0:0:0:0:1/64"}',
      /spec\.cidr: fd00:0:0:0:0:0:0:1\/64 has host bits set; did you mean fd00::\/64\?$/,
    );
    assert.equal(blockAddress('fd00:0:0:0:0:0:0:0/122', 1), 'fd00::1');
    assert.equal(blockAddress('2001:db8:0:0:1:0:0:0/122', 1), '2001:db8::1:0:0:1');
    assert.equal(blockAddress('::ffff:10.0.0.0/122', 1), '::ffff:10.0.0.1');
    assert.equal(blockAddress('10.1.2.0/26', 63), '10.1.2.63');
    assert.equal(blockName('fd00::40/122'), 'fd00--40-122');
    // Read: no leading zeros (octal to some parsers), no zone: an address here is 4 or 16 octets.
    bad(
      'kind: IPPool\nmetadata: {name: p}\nspec: {cidr: 010.0.0.0/8}',
      /spec\.cidr: "010\.0\.0\.0\/8" is not a CIDR \(address\/prefix-length\)$/,
    );
    bad(
      'kind: BGPPeer\nmetadata: {name: p}\nspec: {peerIP: "fe80::1%eth0", asNumber: 64512}',
      /spec\.peerIP: "fe80::1%eth0" is not an IP address$/,
    );
    bad(
      'kind: Node\nmetadata: {name: n}\nspec: {bgp: {routeReflectorClusterID: fd00::1}}',
      /spec\.bgp\.routeReflectorClusterID: "fd00::1" is not a dotted-quad identifier \(four octets, not 0\.0\.0\.0, such as 10\.0\.0\.1\)$/,
    );
  });

  it("evaluates Calico's selector language", () => {
    const s = parseSelector("rack == 'r1' && !has(edge) || zone in {'a', 'b'}");
    assert.equal(s({ rack: 'r1' }), true);
    assert.equal(s({ rack: 'r1', edge: '' }), false);
    assert.equal(s({ zone: 'b' }), true);
    assert.equal(parseSelector('all()')({}), true);
    assert.equal(parseSelector("rack not in {'r1'}")({ rack: 'r2' }), true);
    assert.throws(() => parseSelector('rack =='), /expected a quoted value/);
  });

  it("a Node's WireGuard status is read at the top, as Calico prints it, kept in the spec, and printed at the top again", () => {
    const key = 'm9TXUUo74FvTEOHtg4w7fYrcBl4SwOweSFuDGkJeIn8=';
    const text = `
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1}
spec:
  bgp: {ipv4Address: 10.0.0.1/24}
  wireguard: {interfaceIPv4Address: 10.65.0.1}
status:
  wireguardPublicKey: ${key}
`;
    const [node] = parseResources(text);
    assert.deepEqual(node?.spec, {
      bgp: { ipv4Address: '10.0.0.1/24' },
      wireguard: { interfaceIPv4Address: '10.65.0.1' },
      status: { wireguardPublicKey: key },
    });
    const printed = formatResources(node ? [node] : []);
    assert.match(printed, new RegExp(`\\nstatus:\\n  wireguardPublicKey: ${key.replace(/[+/]/g, '\\$&')}`), printed);
    assert.deepEqual(parseResources(printed), [node], 'what is printed applies again');
    bad(`${text}\n`.replace('  wireguard:', `  status: {wireguardPublicKey: ${key}}\n  wireguard:`), 'status');
  });
});
