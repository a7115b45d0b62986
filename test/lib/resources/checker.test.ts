// Numbers written in quotes, read from YAML as calicoctl's strict decoding and the API server
// read them: an integer field refuses the string "26", naming the field and the type, while an
// AS number may be written as a string ("64512", or asdot "1.10"), as Calico's
// numorstring.ASNumber allows.
import assert from 'node:assert/strict';
import { parseResources, ValidationError } from '../../../lib/resources/index.js';

/** The one error reading `yaml` gives. */
function refusal(yaml: string): ValidationError {
  try {
    parseResources(yaml);
  } catch (e) {
    assert.ok(e instanceof ValidationError, `not a ValidationError: ${String(e)}`);
    return e;
  }
  assert.fail(`accepted:\n${yaml}`);
}

const service = (port: string) => `apiVersion: v1
kind: Service
metadata: { name: web, namespace: shop }
spec:
  type: NodePort
  selector: { app: web }
  ports:
    - ${port}
`;

describe('resources: quoted numbers', () => {
  const cases: [what: string, yaml: string, field: string, string: string][] = [
    [
      'IPPool blockSize',
      'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: { name: p }\nspec: { cidr: 10.0.0.0/16, blockSize: "26" }\n',
      'spec.blockSize',
      '"26"',
    ],
    [
      'BGPConfiguration listenPort',
      'apiVersion: projectcalico.org/v3\nkind: BGPConfiguration\nmetadata: { name: default }\nspec: { listenPort: "179" }\n',
      'spec.listenPort',
      '"179"',
    ],
    [
      'IPAMConfiguration maxBlocksPerHost',
      'apiVersion: projectcalico.org/v3\nkind: IPAMConfiguration\nmetadata: { name: default }\nspec: { maxBlocksPerHost: "4" }\n',
      'spec.maxBlocksPerHost',
      '"4"',
    ],
    [
      'FelixConfiguration vxlanPort',
      'apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\nmetadata: { name: default }\nspec: { vxlanPort: "4789" }\n',
      'spec.vxlanPort',
      '"4789"',
    ],
    ['Service port', service('{ port: "80" }'), 'spec.ports[0].port', '"80"'],
    ['Service targetPort', service('{ port: 80, targetPort: "8080" }'), 'spec.ports[0].targetPort', '"8080"'],
    ['Service nodePort', service('{ port: 80, nodePort: "30080" }'), 'spec.ports[0].nodePort', '"30080"'],
  ];
  for (const [what, yaml, field, string] of cases)
    it(`refuses a quoted ${what}, naming the field and the type`, () => {
      const e = refusal(yaml);
      assert.equal(e.field, field, e.message);
      assert.match(e.reason, new RegExp(`^must be an integer from \\d+ to \\d+, not the string ${string}$`), e.message);
    });

  it('takes the same fields written as numbers', () => {
    const [pool] = parseResources(
      'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: { name: p }\nspec: { cidr: 10.0.0.0/16, blockSize: 26 }\n',
    );
    assert.equal((pool as { spec: { blockSize: number } }).spec.blockSize, 26);
    const [svc] = parseResources(service('{ port: 80, targetPort: 8080, nodePort: 30080 }'));
    const port = (svc as unknown as { spec: { ports: { port: number; targetPort: number; nodePort: number }[] } }).spec.ports[0]!;
    assert.deepEqual([port.port, port.targetPort, port.nodePort], [80, 8080, 30080]);
  });

  it('takes AS numbers written as strings, plain or asdot, in BGPConfiguration, BGPPeer and Node', () => {
    const [conf, peer, node] = parseResources(`apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: { name: default }
spec: { asNumber: "64512" }
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: { name: tor }
spec: { peerIP: 192.0.2.1, asNumber: "1.10" }
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: { name: n1 }
spec: { bgp: { ipv4Address: 192.0.2.2/24, asNumber: "4200000000" } }
`) as unknown as [{ spec: { asNumber: number } }, { spec: { asNumber: number } }, { spec: { bgp: { asNumber: number } } }];
    assert.equal(conf.spec.asNumber, 64512);
    assert.equal(peer.spec.asNumber, 65546, 'asdot 1.10 is 1 * 65536 + 10');
    assert.equal(node.spec.bgp.asNumber, 4200000000);
  });

  it('refuses an AS number that is none, in either form', () => {
    for (const [as, why] of [
      ['"1.70000"', 'an asdot half above 65535'],
      ['"0"', 'AS 0'],
      ['"4294967296"', 'above 32 bits'],
      ['"AS64512"', 'not digits'],
      ['true', 'not a number'],
    ]) {
      const e = refusal(
        `apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: { name: tor }\nspec: { peerIP: 192.0.2.1, asNumber: ${as} }\n`,
      );
      assert.equal(e.field, 'spec.asNumber', `${why}: ${e.message}`);
    }
  });
});
