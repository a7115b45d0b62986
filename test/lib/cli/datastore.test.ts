import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runDatastoreCommand } from '../../../lib/cli/datastore.js';
import { memoryDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';

describe('datastore: CLI face (apply, get, ipam show)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podroute-cli-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('applies YAML, gets it back as a table and as YAML, and shows IPAM usage', async () => {
    const ds = memoryDatastore();
    const out: string[] = [];
    const err: string[] = [];
    const io = { stdout: (s: string) => out.push(s), stderr: (s: string) => err.push(s) };
    const file = join(dir, 'pool.yaml');
    writeFileSync(file, 'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.60.0.0/24, blockSize: 28}\n');
    assert.equal(await runDatastoreCommand(['apply', '-f', file], io, ds), 0);
    assert.match(out.join(''), /applied IPPool p \(revision 1\)/);
    out.length = 0;
    assert.equal(await runDatastoreCommand(['get', 'ippools'], io, ds), 0);
    assert.match(out.join(''), /^NAME\s+CIDR\s+BLOCKSIZE.*\np\s+10\.60\.0\.0\/24\s+28\s+Never/);
    out.length = 0;
    assert.equal(await runDatastoreCommand(['get', 'ippool', 'p', '-o', 'yaml'], io, ds), 0);
    assert.match(out.join(''), /^apiVersion: projectcalico.org\/v3\nkind: IPPool\nmetadata:\n {2}name: p\n {2}resourceVersion: "1"/);
    await new Ipam(ds).autoAssign({ handle: 'h', node: 'n1' });
    out.length = 0;
    assert.equal(await runDatastoreCommand(['ipam', 'show', '--show-blocks'], io, ds), 0);
    assert.match(out.join(''), /\| IP Pool\s+\| 10\.60\.0\.0\/24\s+\|\s+\| 256\s+\| 1 \(0%\)/);
    assert.match(out.join(''), /\| Block\s+\| 10\.60\.0\.\d+\/28\s+\| host:n1\s+\| 16\s+\| 1 \(6%\)/);
    // Bad input: refused before anything is written, naming the field.
    writeFileSync(file, 'kind: IPPool\nmetadata: {name: q}\nspec: {cidr: 10.60.0.128/25}\n---\nkind: Nope\nmetadata: {name: x}\n');
    assert.equal(await runDatastoreCommand(['apply', '-f', file], io, ds), 1);
    assert.match(err.join(''), /podroute apply: document 2: kind: unknown kind "Nope"/);
    assert.equal((await ds.list('IPPool')).items.length, 1);
    writeFileSync(file, 'kind: IPPool\nmetadata: {name: q}\nspec: {cidr: 10.60.0.128/25}\n');
    assert.equal(await runDatastoreCommand(['apply', '-f', file], io, ds), 1);
    assert.match(err.join(''), /spec\.cidr: 10\.60\.0\.128\/25 overlaps pool p/);
    await ds.close();
  });
});
