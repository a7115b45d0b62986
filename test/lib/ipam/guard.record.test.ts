// The file the CNI plugin (in its own process, or in the agent for the shim) keeps the store's
// identity in: 0600 in a 0755 folder whatever the umask, so another user can neither rewrite it
// (and so make the node allocate from a store that lost its allocations) nor swap the folder.
import assert from 'node:assert/strict';
import { lstatSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileIdentityRecord } from '../../../lib/ipam/index.js';
import { NOBODY, nobodysFolder, nodeAsNobody, reachableTempDir, underUmaskAsync } from '../../support/nobody.js';

const mode = (p: string) => (lstatSync(p).mode & 0o7777).toString(8);
const ID = { storeId: 'b1f0', revision: 7, epoch: 0 };

describe('ipam: the store identity record file', function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(() => {
    dir = reachableTempDir('identity');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('under umask 000 it is 0600 in 0755 folders, and nobody cannot rewrite or move it', async () => {
    const file = join(dir, 'var', 'cni', 'store-identity-x.json');
    const record = fileIdentityRecord(file);
    await underUmaskAsync(0o000, () => record.save(ID));
    assert.equal(mode(file), '600', 'the identity file');
    for (const f of [join(dir, 'var'), join(dir, 'var', 'cni')]) assert.equal(mode(f), '755', f);
    assert.deepEqual(await record.load(), ID);
    const r = nodeAsNobody(
      `const fs = require('fs'); const f = process.argv[1]; const out = [];
       for (const [what, fn] of [['write', () => fs.writeFileSync(f, '{}')], ['rename', () => fs.renameSync(f, f + '.old')]])
         try { fn(); out.push(what + ': done'); } catch (e) { out.push(what + ': ' + e.code); }
       console.log(out.join(', '));`,
      file,
    );
    assert.equal(r.stdout.trim(), 'write: EACCES, rename: EACCES', `as nobody: ${r.stdout}${r.stderr}`);
    assert.deepEqual(await record.load(), ID, 'the record changed');
  });

  it('a state folder owned by nobody is refused, naming it', async () => {
    const theirs = nobodysFolder(join(dir, 'cni'));
    await assert.rejects(fileIdentityRecord(join(theirs, 'store-identity-x.json')).save(ID), {
      message: new RegExp(`^store identity record: ${theirs} is owned by uid ${NOBODY} \\(nobody\\)`),
    });
  });
});
