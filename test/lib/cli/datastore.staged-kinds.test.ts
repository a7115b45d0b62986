// The staged policy kinds through `podroute apply -f`, `get <kind> [-o yaml]` and `delete`, on
// every datastore (memory, the embedded file, Redis, etcd): what comes back reads as what went in
// (stagedAction and the enforced kind's defaults filled), a staged policy's tier must exist, and a
// tier holding one cannot be deleted.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { runDatastoreCommand } from '../../../lib/cli/datastore.js';
import { type BackendDatastore, memoryDatastore, openFileDatastore } from '../../../lib/datastore/index.js';
import { parseResources, type Resource } from '../../../lib/resources/index.js';
import { backendNamed, type StoreUnderTest } from '../../support/datastore-backends.js';

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

function roundTrip(open: () => Promise<BackendDatastore>): void {
  const dir = mkdtempSync(join(tmpdir(), 'podroute-staged-cli-'));
  const file = join(dir, 'staged.yaml');
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

  it('apply stores each staged kind; get -o yaml gives back what was applied, with stagedAction and the defaults', async () => {
    const applied = await cli('apply', '-f', file);
    assert.match(applied, /applied StagedNetworkPolicy x\/deny-y/);
    assert.match(applied, /applied StagedGlobalNetworkPolicy no-telnet/);
    assert.match(applied, /applied StagedKubernetesNetworkPolicy x\/db/);
    const want = parseResources(MANIFESTS);
    for (const [kind, arg] of GET_NAMES) {
      const text = await cli('get', arg, '-o', 'yaml');
      assert.deepEqual(parseResources(text).map(strip), want.filter((r) => r.kind === kind).map(strip), `${arg}:\n${text}`);
    }
    const one = parse(await cli('get', 'sknp', 'db', '-n', 'x', '-o', 'yaml')) as {
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
    const snp = await cli('get', 'snp', '-n', 'x');
    assert.match(snp, /^NAME\s+ACTION\s+TIER\s+ORDER\s+SELECTOR\s+TYPES\n/);
    assert.match(snp, /x\/deny-y\s+Set\s+default\s+10\s+app == 'web'\s+Ingress\n/);
    assert.match(snp, /x\/old\s+Delete\s+default\s*\n/);
    assert.match(await cli('get', 'stagedglobalnetworkpolicies'), /no-telnet\s+Set\s+security\s+all\(\)\s+Ingress/);
    assert.match(await cli('get', 'sknp'), /x\/db\s+Set\s+app == "db"\s+Ingress\n/);
  });

  it('a staged policy in a tier that does not exist is refused naming spec.tier, and writes nothing', async () => {
    writeFileSync(file, 'apiVersion: projectcalico.org/v3\nkind: StagedGlobalNetworkPolicy\nmetadata: {name: p}\nspec: {tier: platform}\n');
    const before = await ds.revision();
    assert.equal(await runDatastoreCommand(['apply', '-f', file], io, ds), 1);
    assert.match(err.join(''), /StagedGlobalNetworkPolicy\/p: spec\.tier: tier "platform" does not exist/);
    assert.equal(await ds.revision(), before);
  });

  it('a tier holding a staged policy cannot be deleted', async () => {
    assert.equal(await runDatastoreCommand(['delete', 'tier', 'security'], io, ds), 1);
    assert.match(err.join(''), /tier "security" still holds StagedGlobalNetworkPolicy no-telnet/);
  });

  it('delete takes each staged kind by its names; nothing is left', async () => {
    assert.match(await cli('delete', 'snp', 'deny-y', '-n', 'x'), /deleted StagedNetworkPolicy x\/deny-y/);
    assert.match(await cli('delete', 'stagednetworkpolicy', 'x/old'), /deleted StagedNetworkPolicy x\/old/);
    assert.match(await cli('delete', 'sgnp', 'no-telnet'), /deleted StagedGlobalNetworkPolicy no-telnet/);
    assert.match(await cli('delete', 'sknp', 'db', '-n', 'x'), /deleted StagedKubernetesNetworkPolicy x\/db/);
    assert.match(await cli('delete', 'tier', 'security'), /deleted Tier security/);
    for (const kind of ['StagedNetworkPolicy', 'StagedGlobalNetworkPolicy', 'StagedKubernetesNetworkPolicy'] as const)
      assert.deepEqual((await ds.list(kind)).items, [], kind);
  });
}

describe('datastore: staged policy kinds through podroute apply/get/delete (memory)', () => {
  roundTrip(async () => memoryDatastore());
});

describe('datastore: staged policy kinds through podroute apply/get/delete (file)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podroute-staged-file-'));
  roundTrip(() => openFileDatastore(join(dir, 'store.json')));
  // After the round trip's own after hook, which closes (and so writes) the store.
  after(() => rmSync(dir, { recursive: true, force: true }));
});

for (const name of ['redis', 'etcd'])
  describe(`datastore: staged policy kinds through podroute apply/get/delete (real ${name})`, function () {
    this.timeout(120_000);
    let store: StoreUnderTest | undefined;
    before(async function () {
      this.timeout(120_000);
      store = await backendNamed(name).start();
    });
    after(async () => {
      await store?.stop();
    });
    roundTrip(() => store!.open(`staged${process.pid}`));
  });
