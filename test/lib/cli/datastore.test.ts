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

  it('get prints a plain-text BGP password as a marker unless --show-secrets, and the marker is refused on apply', async () => {
    const ds = memoryDatastore();
    const out: string[] = [];
    const err: string[] = [];
    const io = { stdout: (s: string) => out.push(s), stderr: (s: string) => err.push(s) };
    const file = join(dir, 'peer.yaml');
    writeFileSync(
      file,
      [
        'kind: BGPPeer\nmetadata: {name: tor}\nspec: {peerIP: 10.0.0.1, asNumber: 65001, password: s3cr3t-md5}',
        'kind: BGPPeer\nmetadata: {name: ref}\nspec: {peerIP: 10.0.0.2, asNumber: 65001, password: {secretKeyRef: {name: bgp, key: ref}}}',
        'kind: BGPConfiguration\nmetadata: {name: default}\nspec: {nodeMeshPassword: mesh-s3cr3t}',
      ].join('\n---\n'),
    );
    assert.equal(await runDatastoreCommand(['apply', '-f', file], io, ds), 0, err.join(''));
    for (const args of [
      ['get', 'bgppeers', '-o', 'yaml'],
      ['get', 'bgppeer', 'tor', '-o', 'json'],
      ['get', 'bgpconfiguration', '-o', 'yaml'],
      ['get', 'bgppeers', '-o', 'wide'],
    ]) {
      out.length = 0;
      assert.equal(await runDatastoreCommand(args, io, ds), 0, args.join(' '));
      assert.doesNotMatch(out.join(''), /s3cr3t/, `${args.join(' ')} printed a password`);
    }
    out.length = 0;
    assert.equal(await runDatastoreCommand(['get', 'bgppeers', '-o', 'yaml'], io, ds), 0);
    const yaml = out.join('');
    assert.match(yaml, /password: "?<redacted: podroute get --show-secrets prints it>"?/);
    assert.match(yaml, /secretKeyRef:\n\s+name: bgp\n\s+key: ref/, 'a secretKeyRef is a reference and prints as it is');
    out.length = 0;
    assert.equal(await runDatastoreCommand(['get', 'bgppeer', 'tor', '-o', 'json', '--show-secrets'], io, ds), 0);
    assert.equal((JSON.parse(out.join('')) as { spec: { password: string } }).spec.password, 's3cr3t-md5');
    // The redacted listing applied back would set the key to the marker: refused, nothing changed.
    writeFileSync(file, yaml);
    assert.equal(await runDatastoreCommand(['apply', '-f', file], io, ds), 1);
    assert.match(err.join(''), /spec\.password: is the marker podroute get prints in place of a password/);
    const tor = (await ds.list('BGPPeer')).items.find((r) => r.metadata.name === 'tor');
    assert.equal((tor?.spec as { password?: string } | undefined)?.password, 's3cr3t-md5');
    await ds.close();
  });
});
