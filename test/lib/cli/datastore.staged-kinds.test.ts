// The staged policy kinds through `podroute apply -f`, `get <kind> [-o yaml]` and `delete`, on
// every datastore (memory, the embedded file, Redis, etcd): what comes back reads as what went in
// (stagedAction and the enforced kind's defaults filled), a staged policy's tier must exist, and a
// tier holding one cannot be deleted.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { parse } from 'yaml';
import { parseResources, type Resource } from '../../../lib/resources/index.js';
import { onEveryStore } from '../../support/datastore-cli.js';

const MANIFESTS = `
apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: security}
spec: {order: 100}
---
apiVersion: projectcalico.org/v3
kind: StagedNetworkPolicy
metadata: {name: deny-y, namespace: x}
spec:
  order: 10
  selector: app == 'web'
  ingress:
  - action: Deny
    source: {namespaceSelector: ns == 'y'}
---
apiVersion: projectcalico.org/v3
kind: StagedNetworkPolicy
metadata: {name: old, namespace: x}
spec: {stagedAction: Delete}
---
apiVersion: projectcalico.org/v3
kind: StagedGlobalNetworkPolicy
metadata: {name: no-telnet}
spec:
  stagedAction: Set
  tier: security
  types: [Ingress]
  ingress:
  - action: Deny
    protocol: TCP
    destination: {ports: [23]}
  - action: Pass
---
apiVersion: projectcalico.org/v3
kind: StagedKubernetesNetworkPolicy
metadata: {name: db, namespace: x}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: web}}}]
    ports: [{port: 5432}]
`;

const GET_NAMES: [string, string][] = [
  ['StagedNetworkPolicy', 'stagednetworkpolicies'],
  ['StagedGlobalNetworkPolicy', 'sgnp'],
  ['StagedKubernetesNetworkPolicy', 'stagedkubernetesnetworkpolicy'],
];

const strip = (r: Resource): unknown => {
  const { resourceVersion: _rv, creationTimestamp: _ct, ...metadata } = r.metadata;
  return { ...r, metadata };
};

onEveryStore('datastore: staged policy kinds through podroute apply/get/delete', MANIFESTS, (t) => {
  it('apply stores each staged kind; get -o yaml gives back what was applied, with stagedAction and the defaults', async () => {
    const applied = await t.cli('apply', '-f', t.file);
    assert.match(applied, /applied StagedNetworkPolicy x\/deny-y/);
    assert.match(applied, /applied StagedGlobalNetworkPolicy no-telnet/);
    assert.match(applied, /applied StagedKubernetesNetworkPolicy x\/db/);
    const want = parseResources(MANIFESTS);
    for (const [kind, arg] of GET_NAMES) {
      const text = await t.cli('get', arg, '-o', 'yaml');
      assert.deepEqual(parseResources(text).map(strip), want.filter((r) => r.kind === kind).map(strip), `${arg}:\n${text}`);
    }
    const one = parse(await t.cli('get', 'sknp', 'db', '-n', 'x', '-o', 'yaml')) as {
      apiVersion: string;
      kind: string;
      spec: Record<string, unknown>;
    };
    assert.equal(one.apiVersion, 'projectcalico.org/v3');
    assert.equal(one.kind, 'StagedKubernetesNetworkPolicy');
    assert.equal(one.spec.stagedAction, 'Set', 'stagedAction is filled in');
    assert.deepEqual(one.spec.policyTypes, ['Ingress']);
  });

  it('get prints tables with the staged action', async () => {
    const snp = await t.cli('get', 'snp', '-n', 'x');
    assert.match(snp, /^NAME\s+ACTION\s+TIER\s+ORDER\s+SELECTOR\s+TYPES\n/);
    assert.match(snp, /x\/deny-y\s+Set\s+default\s+10\s+app == 'web'\s+Ingress\n/);
    assert.match(snp, /x\/old\s+Delete\s+default\s*\n/);
    assert.match(await t.cli('get', 'stagedglobalnetworkpolicies'), /no-telnet\s+Set\s+security\s+all\(\)\s+Ingress/);
    assert.match(await t.cli('get', 'sknp'), /x\/db\s+Set\s+app == "db"\s+Ingress\n/);
  });

  it('a staged policy in a tier that does not exist is refused naming spec.tier, and writes nothing', async () => {
    writeFileSync(
      t.file,
      'apiVersion: projectcalico.org/v3\nkind: StagedGlobalNetworkPolicy\nmetadata: {name: p}\nspec: {tier: platform}\n',
    );
    const before = await t.ds.revision();
    assert.equal(await t.run('apply', '-f', t.file), 1);
    assert.match(t.err.join(''), /StagedGlobalNetworkPolicy\/p: spec\.tier: tier "platform" does not exist/);
    assert.equal(await t.ds.revision(), before);
  });

  it('a tier holding a staged policy cannot be deleted', async () => {
    assert.equal(await t.run('delete', 'tier', 'security'), 1);
    assert.match(t.err.join(''), /tier "security" still holds StagedGlobalNetworkPolicy no-telnet/);
  });

  it('delete takes each staged kind by its names; nothing is left', async () => {
    assert.match(await t.cli('delete', 'snp', 'deny-y', '-n', 'x'), /deleted StagedNetworkPolicy x\/deny-y/);
    assert.match(await t.cli('delete', 'stagednetworkpolicy', 'x/old'), /deleted StagedNetworkPolicy x\/old/);
    assert.match(await t.cli('delete', 'sgnp', 'no-telnet'), /deleted StagedGlobalNetworkPolicy no-telnet/);
    assert.match(await t.cli('delete', 'sknp', 'db', '-n', 'x'), /deleted StagedKubernetesNetworkPolicy x\/db/);
    assert.match(await t.cli('delete', 'tier', 'security'), /deleted Tier security/);
    for (const kind of ['StagedNetworkPolicy', 'StagedGlobalNetworkPolicy', 'StagedKubernetesNetworkPolicy'] as const)
      assert.deepEqual((await t.ds.list(kind)).items, [], kind);
  });
});
