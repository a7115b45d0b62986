// The policy kinds, Tiers, Namespace and labelled WorkloadEndpoints through `podroute apply -f`,
// `get <kind> [-o yaml|json]` and `delete`, on the memory store, the file store, a real Redis
// and a real etcd: what comes back reads as what went in (defaults filled), Kubernetes'
// NetworkPolicy under its own apiVersion and kind beside a Calico NetworkPolicy of the same name, the admin policies
// under policy.networking.k8s.io; the fixed tiers are always there and never deleted.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { parse } from 'yaml';
import { parseResources, type Resource, resourceKey } from '../../../lib/resources/index.js';
import { onEveryStore } from '../../support/datastore-cli.js';

const MANIFESTS = `
apiVersion: v1
kind: Namespace
metadata:
  name: x
  labels: {team: blue}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: x}
spec:
  podSelector:
    matchLabels: {app: web}
    matchExpressions: [{key: tier, operator: NotIn, values: [db]}]
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {team: blue}}
      podSelector: {matchLabels: {role: client}}
    - ipBlock: {cidr: 192.168.0.0/16, except: [192.168.1.0/24]}
    ports:
    - {port: 80}
    - {protocol: UDP, port: dns}
    - {protocol: SCTP, port: 9000, endPort: 9100}
  egress:
  - to: [{podSelector: {}}]
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: web, namespace: x}
spec:
  order: 100
  selector: app == 'web'
  ingress:
  - action: Deny
    protocol: TCP
    source: {nets: [10.0.0.0/8], notSelector: "has(trusted)"}
    destination: {ports: [22, "8000:8080", http]}
  - action: Pass
  - action: Allow
    protocol: ICMP
    icmp: {type: 8}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: deny-egress}
spec:
  order: 10.5
  namespaceSelector: team == 'blue'
  types: [Egress]
  egress:
  - action: Log
  - action: Allow
    destination: {namespaceSelector: global()}
---
apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: security}
spec:
  order: 100
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: security.no-telnet}
spec:
  tier: security
  order: 1
  ingress:
  - action: Deny
    protocol: TCP
    destination: {ports: [23]}
  - action: Pass
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: guard}
spec:
  priority: 10
  subject: {pods: {namespaceSelector: {matchLabels: {team: blue}}, podSelector: {matchLabels: {app: web}}}}
  ingress:
  - name: pass-monitoring
    action: Pass
    from: [{namespaces: {matchLabels: {team: mon}}}]
    ports: [{portNumber: {port: 80}}, {portRange: {protocol: UDP, start: 5000, end: 5100}}, {namedPort: http}]
  egress:
  - {action: Deny, to: [{networks: [192.0.2.0/24]}]}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata: {name: default}
spec:
  subject: {namespaces: {}}
  ingress:
  - {action: Deny, from: [{namespaces: {}}]}
---
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata:
  name: n1-k8s-a-eth0
  namespace: x
  labels: {app: web, projectcalico.org/namespace: x, projectcalico.org/orchestrator: k8s}
spec:
  node: n1
  pod: a
  interfaceName: cali0123456789a
  ipNetworks: [10.244.0.5/32]
  ports: [{name: http, port: 80}, {name: dns, protocol: UDP, port: 53}]
`;

const GET_NAMES: [string, string][] = [
  ['Namespace', 'namespaces'],
  ['KubernetesNetworkPolicy', 'networkpolicies.networking.k8s.io'],
  ['NetworkPolicy', 'networkpolicy'],
  ['GlobalNetworkPolicy', 'gnp'],
  ['Tier', 'tiers'],
  ['AdminNetworkPolicy', 'adminnetworkpolicies'],
  ['BaselineAdminNetworkPolicy', 'banp'],
  ['WorkloadEndpoint', 'wep'],
];
/** The tiers `get tier` lists whether or not the store holds them. */
const FIXED_TIERS = ['adminnetworkpolicy', 'baselineadminnetworkpolicy', 'default'];

const strip = (r: Resource): unknown => {
  const { resourceVersion: _rv, ...metadata } = r.metadata;
  return { ...r, metadata };
};

onEveryStore('datastore: policy kinds through podroute apply/get/delete', MANIFESTS, (t) => {
  it('apply stores each kind; get -o yaml gives back what was applied, with the defaults', async () => {
    const applied = await t.cli('apply', '-f', t.file);
    assert.match(applied, /applied Namespace x \(revision \d+\)/);
    assert.match(applied, /applied NetworkPolicy\.networking\.k8s\.io x\/web/);
    assert.match(applied, /applied NetworkPolicy x\/web/);
    const want = parseResources(MANIFESTS);
    for (const [kind, arg] of GET_NAMES) {
      const text = await t.cli('get', arg, '-o', 'yaml');
      const back = parseResources(text).filter((r) => !(r.kind === 'Tier' && FIXED_TIERS.includes(r.metadata.name)));
      assert.deepEqual(back.map(strip), want.filter((r) => r.kind === kind).map(strip), `${arg}:\n${text}`);
    }
    // One object, by name: a document of its own, in the manifest's own apiVersion and kind.
    const one = parse(await t.cli('get', 'knp', 'web', '-n', 'x', '-o', 'yaml')) as Record<string, unknown>;
    assert.equal(one.apiVersion, 'networking.k8s.io/v1');
    assert.equal(one.kind, 'NetworkPolicy');
    assert.deepEqual((one.spec as { policyTypes: string[] }).policyTypes, ['Ingress', 'Egress']);
    const json = JSON.parse(await t.cli('get', 'netpol', 'x/web', '-o', 'json')) as Record<string, unknown>;
    assert.equal(json.kind, 'NetworkPolicy');
    assert.equal(json.apiVersion, 'networking.k8s.io/v1');
    const ns = parse(await t.cli('get', 'ns', 'x', '-o', 'yaml')) as { metadata: Record<string, unknown> };
    assert.match(String(ns.metadata.resourceVersion), /^\d+$/);
    delete ns.metadata.resourceVersion;
    assert.deepEqual(ns, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'x', labels: { team: 'blue', 'kubernetes.io/metadata.name': 'x' } },
    });
    const calico = parse(await t.cli('get', 'np', 'web', '-n', 'x', '-o', 'yaml')) as Record<string, unknown>;
    assert.equal(calico.apiVersion, 'projectcalico.org/v3');
    assert.deepEqual((calico.spec as { types: string[] }).types, ['Ingress']);
  });

  it('get prints tables a person reads', async () => {
    assert.match(
      await t.cli('get', 'knp'),
      /^NAME\s+POD-SELECTOR\s+POLICY-TYPES\nx\/web\s+app == "web" && tier not in \{"db"\}\s+Ingress,Egress\n$/,
    );
    assert.match(
      await t.cli('get', 'networkpolicies'),
      /^NAME\s+TIER\s+ORDER\s+SELECTOR\s+TYPES\nx\/web\s+default\s+100\s+app == 'web'\s+Ingress\n$/,
    );
    assert.match(await t.cli('get', 'globalnetworkpolicies'), /deny-egress\s+default\s+10\.5\s+all\(\)\s+Egress/);
    assert.match(await t.cli('get', 'globalnetworkpolicies'), /security\.no-telnet\s+security\s+1\s+all\(\)\s+Ingress/);
    assert.equal(
      await t.cli('get', 'tier'),
      [
        'NAME                         ORDER      DEFAULTACTION',
        'adminnetworkpolicy           1000       Pass',
        'baselineadminnetworkpolicy   10000000   Pass',
        'default                      1000000    Deny',
        'security                     100        Deny',
        '',
      ].join('\n'),
    );
    assert.match(await t.cli('get', 'tier', 'default', '-o', 'yaml'), /name: default\nspec:\n {2}order: 1000000\n {2}defaultAction: Deny/);
    assert.equal(
      await t.cli('get', 'anp'),
      'NAME    PRIORITY   SUBJECT                                          INGRESS-RULES   EGRESS-RULES\n' +
        'guard   10         pods app == "web" in namespaces team == "blue"   1               1\n',
    );
    assert.equal(
      await t.cli('get', 'baselineadminnetworkpolicy'),
      'NAME      SUBJECT            INGRESS-RULES   EGRESS-RULES\ndefault   namespaces all()   1               0\n',
    );
    assert.match(await t.cli('get', 'namespace'), /x\s+team=blue,kubernetes\.io\/metadata\.name=x/);
    assert.match(await t.cli('get', 'weps'), /x\/n1-k8s-a-eth0\s+n1\s+cali0123456789a\s+10\.244\.0\.5\/32\s+app=web,/);
    assert.equal(await t.cli('get', 'knp', '-n', 'y'), 'NAME   POD-SELECTOR   POLICY-TYPES\n');
  });

  it('a bad policy changes nothing and names the document, kind and field', async () => {
    writeFileSync(
      t.file,
      `${MANIFESTS}---\napiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: bad}\nspec: {ingress: [{from: [{}]}]}\n`,
    );
    const before = await t.ds.revision();
    assert.equal(await t.run('apply', '-f', t.file), 1);
    assert.match(t.err.join(''), /document 10 \(NetworkPolicy\/bad\): spec\.ingress\[0\]\.from\[0\]: must specify a peer/);
    assert.equal(await t.ds.revision(), before);
  });

  it('a policy in a tier that does not exist is refused naming spec.tier; a Tier in the same file is enough', async () => {
    const policy = 'apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: platform.p}\nspec: {tier: platform}\n';
    writeFileSync(t.file, policy);
    const before = await t.ds.revision();
    assert.equal(await t.run('apply', '-f', t.file), 1);
    assert.match(t.err.join(''), /GlobalNetworkPolicy\/platform\.p: spec\.tier: tier "platform" does not exist/);
    assert.equal(await t.ds.revision(), before);
    writeFileSync(t.file, `apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: platform}\nspec: {order: 50}\n---\n${policy}`);
    assert.match(await t.cli('apply', '-f', t.file), /applied GlobalNetworkPolicy platform\.p/);
    assert.match(await t.cli('delete', 'gnp', 'platform.p'), /deleted GlobalNetworkPolicy platform\.p/);
    assert.match(await t.cli('delete', 'tier', 'platform'), /deleted Tier platform/);
  });

  it('a tier that still holds policies cannot be deleted, and the default tier never', async () => {
    assert.equal(await t.run('delete', 'tier', 'security'), 1);
    assert.match(t.err.join(''), /tier "security" still holds GlobalNetworkPolicy security\.no-telnet/);
    assert.equal((await t.ds.list('Tier')).items.length, 1, 'the tier is still there');
    assert.equal(await t.run('delete', 'tier', 'default'), 1);
    assert.match(t.err.join(''), /the default tier always exists/);
    assert.equal(await t.run('delete', 'tier', 'adminnetworkpolicy'), 1);
    assert.match(t.err.join(''), /the adminnetworkpolicy tier always exists/);
  });

  it('a Calico policy may join a fixed tier without a Tier resource', async () => {
    writeFileSync(
      t.file,
      'apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: admin-extra}\nspec: {tier: adminnetworkpolicy, order: 5}\n',
    );
    assert.match(await t.cli('apply', '-f', t.file), /applied GlobalNetworkPolicy admin-extra/);
    assert.match(await t.cli('delete', 'gnp', 'admin-extra'), /deleted GlobalNetworkPolicy admin-extra/);
  });

  it('delete takes each kind by its names, namespaced ones by ns/name or -n', async () => {
    assert.match(await t.cli('delete', 'knp', 'web', '-n', 'x'), /deleted NetworkPolicy\.networking\.k8s\.io x\/web/);
    // The Calico policy of the same name is still there.
    assert.equal((await t.ds.list('NetworkPolicy')).items.map(resourceKey).join(), 'x/web');
    assert.match(await t.cli('delete', 'networkpolicy', 'x/web'), /deleted NetworkPolicy x\/web/);
    assert.match(await t.cli('delete', 'globalnetworkpolicy', 'deny-egress'), /deleted GlobalNetworkPolicy deny-egress/);
    assert.match(await t.cli('delete', 'gnp', 'security.no-telnet'), /deleted GlobalNetworkPolicy security\.no-telnet/);
    assert.match(await t.cli('delete', 'tier', 'security'), /deleted Tier security/);
    assert.match(await t.cli('delete', 'anp', 'guard'), /deleted AdminNetworkPolicy guard/);
    assert.match(await t.cli('delete', 'banp', 'default'), /deleted BaselineAdminNetworkPolicy default/);
    assert.match(await t.cli('delete', 'ns', 'x'), /deleted Namespace x/);
    for (const kind of [
      'Namespace',
      'KubernetesNetworkPolicy',
      'NetworkPolicy',
      'GlobalNetworkPolicy',
      'Tier',
      'AdminNetworkPolicy',
      'BaselineAdminNetworkPolicy',
    ] as const)
      assert.deepEqual((await t.ds.list(kind)).items, [], kind);
    assert.equal(await t.run('delete', 'knp', 'web', '-n', 'x'), 1);
    assert.match(t.err.join(''), /not found|does not exist/i);
  });
});
