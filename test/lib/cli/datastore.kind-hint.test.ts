// `podroute delete|get networkpolicy NAME` where NAME is a Kubernetes NetworkPolicy (plain
// "networkpolicy" is Calico's kind, as in calicoctl): the error says which kind holds the name
// and how to name it, and the other way round.
import assert from 'node:assert/strict';
import { runDatastoreCommand } from '../../../lib/cli/datastore.js';
import { memoryDatastore } from '../../../lib/datastore/index.js';

const K8S = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db, namespace: shop}
spec: {podSelector: {matchLabels: {app: db}}, ingress: [{}]}
`;
const CALICO = `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec: {selector: app == 'web', types: [Ingress]}
`;

describe('datastore CLI: a policy name that exists under the other NetworkPolicy kind', () => {
  const run = async (ds: ReturnType<typeof memoryDatastore>, argv: string[], stdin = '') => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runDatastoreCommand(argv, { stdout: (s) => out.push(s), stderr: (s) => err.push(s), readStdin: () => stdin }, ds);
    return { code, stdout: out.join(''), stderr: err.join('') };
  };

  it('delete networkpolicy of a Kubernetes policy names its kind and the command that deletes it', async () => {
    const ds = memoryDatastore();
    assert.equal((await run(ds, ['apply', '-f', '-'], K8S + '---\n' + CALICO)).code, 0);
    const wrong = await run(ds, ['delete', 'networkpolicy', 'db', '-n', 'shop']);
    assert.deepEqual(wrong, {
      code: 1,
      stdout: '',
      stderr:
        'podroute delete: NetworkPolicy "shop/db" does not exist; a Kubernetes NetworkPolicy (networking.k8s.io) shop/db does: ' +
        'podroute delete networkpolicy.networking.k8s.io shop/db (or knp)\n',
    });
    const back = await run(ds, ['delete', 'knp', 'web', '-n', 'shop']);
    assert.equal(back.code, 1);
    assert.match(
      back.stderr,
      /a Calico NetworkPolicy \(projectcalico\.org\) shop\/web does: podroute delete networkpolicy shop\/web \(or np\)\n$/,
    );
    const get = await run(ds, ['get', 'networkpolicy', 'shop/db']);
    assert.equal(get.code, 1);
    assert.match(
      get.stderr,
      /not found; a Kubernetes NetworkPolicy \(networking\.k8s\.io\) shop\/db does: podroute get networkpolicy\.networking\.k8s\.io shop\/db/,
    );
    // The hint's command works, and a name under neither kind gets the plain answer.
    assert.equal((await run(ds, ['delete', 'networkpolicy.networking.k8s.io', 'shop/db'])).code, 0);
    assert.deepEqual(await run(ds, ['delete', 'networkpolicy', 'shop/db']), {
      code: 1,
      stdout: '',
      stderr: 'podroute delete: NetworkPolicy "shop/db" does not exist\n',
    });
    await ds.close();
  });
});
