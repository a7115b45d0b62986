// The policy kinds, Tiers, Namespace and labelled WorkloadEndpoints through `podroute apply -f`,
// `get <kind> [-o yaml|json]` and `delete`, on the memory store, the file store, a real Redis
// and a real etcd: what comes back reads as what went in (defaults filled), Kubernetes'
// NetworkPolicy under its own apiVersion and kind beside a Calico NetworkPolicy of the same name, the admin policies
// under policy.networking.k8s.io; the fixed tiers are always there and never deleted.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { runDatastoreCommand } from '../../../lib/cli/datastore.js';
import { type BackendDatastore, etcdDatastore, memoryDatastore, openFileDatastore, redisDatastore } from '../../../lib/datastore/index.js';
import { parseResources, type Resource, resourceKey } from '../../../lib/resources/index.js';
import { type EtcdServer, startEtcd } from '../../support/etcd.js';
import { type RedisServer, startRedis } from '../../support/redis.js';

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

function roundTrip(open: () => Promise<BackendDatastore>): void {
  const dir = mkdtempSync(join(tmpdir(), 'podroute-policy-cli-'));
  const file = join(dir, 'policies.yaml');
  const out: string[] = [];
  const err: string[] = [];
  const io = { stdout: (s: string) => out.push(s), stderr: (s: string) => err.push(s) };
  let ds: BackendDatastore;
  const cli = async (...argv: string[]): Promise<string> => {
    out.length = 0;
    err.length = 0;
    const code = await runDatastoreCommand(argv, io, ds);
    assert.equal(code, 0, `${argv.join(' ')}: ${err.join('')}`);
    return out.join('');
  };

  before(async () => {
    ds = await open();
    writeFileSync(file, MANIFESTS);
  });
  after(async () => {
    await ds?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('apply stores each kind; get -o yaml gives back what was applied, with the defaults', async () => {
    const applied = await cli('apply', '-f', file);
    assert.match(applied, /applied Namespace x \(revision \d+\)/);
    assert.match(applied, /applied NetworkPolicy\.networking\.k8s\.io x\/web/);
    assert.match(applied, /applied NetworkPolicy x\/web/);
    const want = parseResources(MANIFESTS);
    for (const [kind, arg] of GET_NAMES) {
      const text = await cli('get', arg, '-o', 'yaml');
      const back = parseResources(text).filter((r) => !(r.kind === 'Tier' && FIXED_TIERS.includes(r.metadata.name)));
      assert.deepEqual(back.map(strip), want.filter((r) => r.kind === kind).map(strip), `${arg}:\n${text}`);
    }
    // One object, by name: a document of its own, in the manifest's own apiVersion and kind.
    const one = parse(await cli('get', 'knp', 'web', '-n', 'x', '-o', 'yaml')) as Record<string, unknown>;
    assert.equal(one.apiVersion, 'networking.k8s.io/v1');
    assert.equal(one.kind, 'NetworkPolicy');
    assert.deepEqual((one.spec as { policyTypes: string[] }).policyTypes, ['Ingress', 'Egress']);
    const json = JSON.parse(await cli('get', 'netpol', 'x/web', '-o', 'json')) as Record<string, unknown>;
    assert.equal(json.kind, 'NetworkPolicy');
    assert.equal(json.apiVersion, 'networking.k8s.io/v1');
    const ns = parse(await cli('get', 'ns', 'x', '-o', 'yaml')) as { metadata: Record<string, unknown> };
    assert.match(String(ns.metadata.resourceVersion), /^\d+$/);
    delete ns.metadata.resourceVersion;
    assert.deepEqual(ns, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'x', labels: { team: 'blue', 'kubernetes.io/metadata.name': 'x' } },
    });
    const calico = parse(await cli('get', 'np', 'web', '-n', 'x', '-o', 'yaml')) as Record<string, unknown>;
    assert.equal(calico.apiVersion, 'projectcalico.org/v3');
    assert.deepEqual((calico.spec as { types: string[] }).types, ['Ingress']);
  });

  it('get prints tables a person reads', async () => {
    assert.match(
      await cli('get', 'knp'),
      /^NAME\s+POD-SELECTOR\s+POLICY-TYPES\nx\/web\s+app == "web" && tier not in \{"db"\}\s+Ingress,Egress\n$/,
    );
    assert.match(
      await cli('get', 'networkpolicies'),
      /^NAME\s+TIER\s+ORDER\s+SELECTOR\s+TYPES\nx\/web\s+default\s+100\s+app == 'web'\s+Ingress\n$/,
    );
    assert.match(await cli('get', 'globalnetworkpolicies'), /deny-egress\s+default\s+10\.5\s+all\(\)\s+Egress/);
    assert.match(await cli('get', 'globalnetworkpolicies'), /security\.no-telnet\s+security\s+1\s+all\(\)\s+Ingress/);
    assert.equal(
      await cli('get', 'tier'),
      [
        'NAME                         ORDER      DEFAULTACTION',
        'adminnetworkpolicy           1000       Pass',
        'baselineadminnetworkpolicy   10000000   Pass',
        'default                      1000000    Deny',
        'security                     100        Deny',
        '',
      ].join('\n'),
    );
    assert.match(await cli('get', 'tier', 'default', '-o', 'yaml'), /name: default\nspec:\n {2}order: 1000000\n {2}defaultAction: Deny/);
    assert.equal(
      await cli('get', 'anp'),
      'NAME    PRIORITY   SUBJECT                                          INGRESS-RULES   EGRESS-RULES\n' +
        'guard   10         pods app == "web" in namespaces team == "blue"   1               1\n',
    );
    assert.equal(
      await cli('get', 'baselineadminnetworkpolicy'),
      'NAME      SUBJECT            INGRESS-RULES   EGRESS-RULES\ndefault   namespaces all()   1               0\n',
    );
    assert.match(await cli('get', 'namespace'), /x\s+team=blue,kubernetes\.io\/metadata\.name=x/);
    assert.match(await cli('get', 'weps'), /x\/n1-k8s-a-eth0\s+n1\s+cali0123456789a\s+10\.244\.0\.5\/32\s+app=web,/);
    assert.equal(await cli('get', 'knp', '-n', 'y'), 'NAME   POD-SELECTOR   POLICY-TYPES\n');
  });

  it('a bad policy changes nothing and names the document, kind and field', async () => {
    writeFileSync(
      file,
      `${MANIFESTS}---\napiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: bad}\nspec: {ingress: [{from: [{}]}]}\n`,
    );
    const before = await ds.revision();
    assert.equal(await runDatastoreCommand(['apply', '-f', file], io, ds), 1);
    assert.match(err.join(''), /document 10 \(NetworkPolicy\/bad\): spec\.ingress\[0\]\.from\[0\]: must specify a peer/);
    assert.equal(await ds.revision(), before);
  });

  it('a policy in a tier that does not exist is refused naming spec.tier; a Tier in the same file is enough', async () => {
    const policy = 'apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: platform.p}\nspec: {tier: platform}\n';
    writeFileSync(file, policy);
    const before = await ds.revision();
    assert.equal(await runDatastoreCommand(['apply', '-f', file], io, ds), 1);
    assert.match(err.join(''), /GlobalNetworkPolicy\/platform\.p: spec\.tier: tier "platform" does not exist/);
    assert.equal(await ds.revision(), before);
    writeFileSync(file, `apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: platform}\nspec: {order: 50}\n---\n${policy}`);
    assert.match(await cli('apply', '-f', file), /applied GlobalNetworkPolicy platform\.p/);
    assert.match(await cli('delete', 'gnp', 'platform.p'), /deleted GlobalNetworkPolicy platform\.p/);
    assert.match(await cli('delete', 'tier', 'platform'), /deleted Tier platform/);
  });

  it('a tier that still holds policies cannot be deleted, and the default tier never', async () => {
    assert.equal(await runDatastoreCommand(['delete', 'tier', 'security'], io, ds), 1);
    assert.match(err.join(''), /tier "security" still holds GlobalNetworkPolicy security\.no-telnet/);
    assert.equal((await ds.list('Tier')).items.length, 1, 'the tier is still there');
    assert.equal(await runDatastoreCommand(['delete', 'tier', 'default'], io, ds), 1);
    assert.match(err.join(''), /the default tier always exists/);
    assert.equal(await runDatastoreCommand(['delete', 'tier', 'adminnetworkpolicy'], io, ds), 1);
    assert.match(err.join(''), /the adminnetworkpolicy tier always exists/);
  });

  it('a Calico policy may join a fixed tier without a Tier resource', async () => {
    writeFileSync(
      file,
      'apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: admin-extra}\nspec: {tier: adminnetworkpolicy, order: 5}\n',
    );
    assert.match(await cli('apply', '-f', file), /applied GlobalNetworkPolicy admin-extra/);
    assert.match(await cli('delete', 'gnp', 'admin-extra'), /deleted GlobalNetworkPolicy admin-extra/);
  });

  it('delete takes each kind by its names, namespaced ones by ns/name or -n', async () => {
    assert.match(await cli('delete', 'knp', 'web', '-n', 'x'), /deleted NetworkPolicy\.networking\.k8s\.io x\/web/);
    // The Calico policy of the same name is still there.
    assert.equal((await ds.list('NetworkPolicy')).items.map(resourceKey).join(), 'x/web');
    assert.match(await cli('delete', 'networkpolicy', 'x/web'), /deleted NetworkPolicy x\/web/);
    assert.match(await cli('delete', 'globalnetworkpolicy', 'deny-egress'), /deleted GlobalNetworkPolicy deny-egress/);
    assert.match(await cli('delete', 'gnp', 'security.no-telnet'), /deleted GlobalNetworkPolicy security\.no-telnet/);
    assert.match(await cli('delete', 'tier', 'security'), /deleted Tier security/);
    assert.match(await cli('delete', 'anp', 'guard'), /deleted AdminNetworkPolicy guard/);
    assert.match(await cli('delete', 'banp', 'default'), /deleted BaselineAdminNetworkPolicy default/);
    assert.match(await cli('delete', 'ns', 'x'), /deleted Namespace x/);
    for (const kind of [
      'Namespace',
      'KubernetesNetworkPolicy',
      'NetworkPolicy',
      'GlobalNetworkPolicy',
      'Tier',
      'AdminNetworkPolicy',
      'BaselineAdminNetworkPolicy',
    ] as const)
      assert.deepEqual((await ds.list(kind)).items, [], kind);
    assert.equal(await runDatastoreCommand(['delete', 'knp', 'web', '-n', 'x'], io, ds), 1);
    assert.match(err.join(''), /not found|does not exist/i);
  });
}

describe('datastore: policy kinds through podroute apply/get/delete (memory)', () => {
  roundTrip(async () => memoryDatastore());
});

describe('datastore: policy kinds through podroute apply/get/delete (file)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podroute-policy-file-'));
  roundTrip(() => openFileDatastore(join(dir, 'datastore.json')));
  // After roundTrip's own after, which closes (and so writes) the store.
  after(() => rmSync(dir, { recursive: true, force: true }));
});

describe('datastore: policy kinds through podroute apply/get/delete (real Redis)', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis?.stop();
  });
  roundTrip(async () => redisDatastore({ url: redis.url, name: `policy${process.pid}` }));
});

describe('datastore: policy kinds through podroute apply/get/delete (real etcd)', function () {
  this.timeout(60_000);
  let etcd: EtcdServer;
  before(async () => {
    etcd = await startEtcd();
  });
  after(async () => {
    await etcd?.stop();
  });
  roundTrip(async () => etcdDatastore({ endpoints: etcd.endpoints, name: `policy${process.pid}` }));
});
