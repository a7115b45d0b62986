// Pods with Kubernetes namespaces and labels in a lab, through the CLI as an operator uses it:
// `pod add --namespace --labels --ports` goes through podroute-cni's CNI_ARGS and
// args.cni.labels to the WorkloadEndpoint; `pod label` rewrites it; `namespace` writes the
// Namespace (pod add makes a missing one, as it exists first in Kubernetes). x/a and y/a
// coexist. Checked in the lab's own datastore (a real Redis).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { redisDatastore, type BackendDatastore } from '../../../lib/datastore/index.js';
import { findPod, parseLabelChanges, parseLabels, parsePortList, podNamespace, podRef } from '../../../lib/lab/pods.js';
import { readState } from '../../../lib/lab/state.js';
import { execCommand } from '../../../lib/lab/system.js';
import { LabUnderTest, ROOT } from './harness.js';

describe('lab pods: namespaces, labels, named ports, relabel (mesh.clab.yml, CLI)', function () {
  this.timeout(180_000);
  const lab = new LabUnderTest('mesh.clab.yml');
  const cli = (...args: string[]) =>
    execCommand([process.execPath, join(ROOT, 'bin/podroute.js'), 'lab', ...args, '--state-dir', lab.stateRoot], { timeoutMs: 90_000 });
  let ds: BackendDatastore;
  const wep = async (ns: string, pod: string) =>
    (await ds.list('WorkloadEndpoint')).items.find((w) => w.metadata.namespace === ns && w.spec.pod === pod);

  before(async () => {
    await lab.up();
    ds = await redisDatastore({ url: lab.state.redisSocket! });
  });
  after(async () => {
    await ds?.close();
    await lab.downAndCheck();
  });

  it('pod add puts the namespace, labels and named ports on the WorkloadEndpoint; x/a and y/a coexist', async () => {
    const xa = await cli(
      'pod',
      'add',
      'n1',
      'a',
      '--namespace',
      'x',
      '--labels',
      'pod=a,app=web',
      '--ports',
      'serve-80-tcp=80,serve-80-udp=80/UDP',
    );
    assert.equal(xa.code, 0, xa.stdout + xa.stderr);
    assert.match(xa.stdout, /^pod x\/a on n1: 10\.244\.\S+ \(network namespace lb\d+-pod-x\.a\)/);
    const ya = await cli('pod', 'add', 'n2', 'a', '-n', 'y', '--labels', 'pod=a');
    assert.equal(ya.code, 0, ya.stdout + ya.stderr);
    // The default namespace keeps the names it always had.
    const plain = await cli('pod', 'add', 'n3', 'b');
    assert.equal(plain.code, 0, plain.stdout + plain.stderr);
    assert.match(plain.stdout, /^pod b on n3: /);
    const again = await cli('pod', 'add', 'n3', 'a', '--namespace', 'x');
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /pod x\/a already exists/);

    const x = await wep('x', 'a');
    assert.deepEqual(x?.metadata.labels, {
      pod: 'a',
      app: 'web',
      'projectcalico.org/namespace': 'x',
      'projectcalico.org/orchestrator': 'k8s',
    });
    assert.deepEqual(x?.spec.ports, [
      { name: 'serve-80-tcp', protocol: 'TCP', port: 80 },
      { name: 'serve-80-udp', protocol: 'UDP', port: 80 },
    ]);
    assert.equal(x?.spec.node, 'n1');
    const y = await wep('y', 'a');
    assert.deepEqual(y?.metadata.labels, { pod: 'a', 'projectcalico.org/namespace': 'y', 'projectcalico.org/orchestrator': 'k8s' });
    assert.equal((await wep('default', 'b'))?.spec.node, 'n3');
    // Each pod's namespace exists, as in Kubernetes, labelled with its name only.
    for (const n of ['x', 'y', 'default'])
      assert.deepEqual((await ds.get('Namespace', n))?.metadata.labels, { 'kubernetes.io/metadata.name': n }, n);

    lab.state = readState(lab.stateRoot, 'mesh')!;
    assert.equal(findPod(lab.state, 'x/a')?.node, 'n1');
    assert.equal(findPod(lab.state, 'a', 'y')?.node, 'n2');
    assert.throws(() => findPod(lab.state, 'a'), /in several namespaces \(x, y\)/);
    assert.equal(podRef(findPod(lab.state, 'b')!), 'b');
    assert.equal(findPod(lab.state, 'b')!.namespace, podNamespace(lab.state, 'b'));
    await lab.waitAllPing();
  });

  it('pod label rewrites the labels in the datastore (k=v sets, k- removes) and keeps Calico’s', async () => {
    const before = await wep('x', 'a');
    const r = await cli('pod', 'label', 'x/a', 'app=db,pod-,tier=back');
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /pod x\/a labels: app=db,tier=back/);
    const after = await wep('x', 'a');
    assert.deepEqual(after?.metadata.labels, {
      app: 'db',
      tier: 'back',
      'projectcalico.org/namespace': 'x',
      'projectcalico.org/orchestrator': 'k8s',
    });
    assert.ok(
      Number(after!.metadata.resourceVersion) > Number(before!.metadata.resourceVersion),
      `resourceVersion ${after?.metadata.resourceVersion} is not after ${before?.metadata.resourceVersion}`,
    );
    assert.deepEqual(after?.spec, before?.spec, 'only the labels change');
    assert.deepEqual(readState(lab.stateRoot, 'mesh')!.pods.find((p) => p.k8sNamespace === 'x')?.labels, { app: 'db', tier: 'back' });
    // Bad labels are refused by the WorkloadEndpoint's validation and change nothing.
    const bad = await cli('pod', 'label', 'a', 'app=not ok', '-n', 'y');
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /metadata\.labels\.app/);
    assert.deepEqual((await wep('y', 'a'))?.metadata.labels?.app, undefined);
    const own = await cli('pod', 'label', 'y/a', 'projectcalico.org/namespace=x');
    assert.notEqual(own.code, 0);
    assert.match(own.stderr, /set by podroute-cni/);
    const nobody = await cli('pod', 'label', 'z/a', 'k=v');
    assert.match(nobody.stderr, /pod "z\/a" is not in lab mesh/);
  });

  it('namespace writes the Namespace with its labels and kubernetes.io/metadata.name', async () => {
    const r = await cli('namespace', 'x', '--labels', 'ns=x,team=blue');
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /namespace x labels: ns=x,team=blue,kubernetes\.io\/metadata\.name=x/);
    assert.deepEqual((await ds.get('Namespace', 'x'))?.metadata.labels, { ns: 'x', team: 'blue', 'kubernetes.io/metadata.name': 'x' });
    // Again: exactly the labels given (a relabelled namespace loses the old ones).
    assert.equal((await cli('namespace', 'x', '--labels', 'ns=x')).code, 0);
    assert.deepEqual((await ds.get('Namespace', 'x'))?.metadata.labels, { ns: 'x', 'kubernetes.io/metadata.name': 'x' });
    const bad = await cli('namespace', 'Bad_Name');
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /metadata\.name/);
  });

  it('pod del takes ns/name and removes that pod only', async () => {
    const r = await cli('pod', 'del', 'x/a');
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(await wep('x', 'a'), undefined);
    assert.ok(await wep('y', 'a'), 'pod y/a went too');
    lab.state = readState(lab.stateRoot, 'mesh')!;
    assert.deepEqual(lab.state.pods.map(podRef).sort(), ['b', 'y/a']);
    // Now "a" is unambiguous.
    assert.equal(findPod(lab.state, 'a')?.k8sNamespace, 'y');
  });

  it('reads label and port lists as kubectl-style text, naming a bad entry', () => {
    assert.deepEqual(parseLabels('a=1, b=x.y ,c='), { a: '1', b: 'x.y', c: '' });
    assert.deepEqual(parseLabelChanges('a=1,b-'), { a: '1', b: null });
    assert.throws(() => parseLabels('a'), /label "a": expected key=value$/);
    assert.throws(() => parseLabels('b-'), /label "b-"/);
    assert.throws(() => parseLabels('=v'), /the key is empty/);
    assert.deepEqual(parsePortList('http=80,dns=53/udp'), [
      { name: 'http', port: 80, protocol: 'TCP' },
      { name: 'dns', port: 53, protocol: 'UDP' },
    ]);
    assert.throws(() => parsePortList('http:80'), /port "http:80": expected name=port/);
  });
});
