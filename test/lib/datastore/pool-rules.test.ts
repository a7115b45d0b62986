import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runDatastoreCommand } from '../../../lib/cli/datastore.js';
import { memoryDatastore, redisDatastore } from '../../../lib/datastore/index.js';
import { ValidationError, validateResource } from '../../../lib/resources/index.js';
import { startRedis } from '../../support/redis.js';

const pool = (name: string, cidr: string, blockSize?: number) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'IPPool',
  metadata: { name },
  spec: { cidr, ...(blockSize !== undefined ? { blockSize } : {}) },
});

function refused(fn: () => unknown, field: string, reason: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ValidationError, String(e));
    assert.equal(e.field, field);
    assert.match(e.reason, reason);
    return true;
  });
}

async function refusedAsync(p: Promise<unknown>, field: string, reason: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof ValidationError, String(e));
    assert.equal(e.field, field);
    assert.match(e.reason, reason);
    return true;
  });
}

describe('dual stack: IPv6 pool bad input', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podroute-v6pools-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('takes /122 blocks by default and any block size from 116 to 128', () => {
    assert.equal((validateResource(pool('v6', 'fd00:10::/64')) as { spec: { blockSize: number } }).spec.blockSize, 122);
    for (const b of [116, 128])
      assert.equal((validateResource(pool('v6', 'fd00:10::/64', b)) as { spec: { blockSize: number } }).spec.blockSize, b);
  });

  it('refuses an IPv4 block size on an IPv6 pool, naming spec.blockSize', () => {
    refused(() => validateResource(pool('v6', 'fd00:10::/64', 26)), 'spec.blockSize', /IPv6 block sizes go from 116 to 128/);
    refused(() => validateResource(pool('v6', 'fd00:10::/64', 115)), 'spec.blockSize', /116 to 128/);
    refused(() => validateResource(pool('v4', '10.9.0.0/16', 122)), 'spec.blockSize', /IPv4 block sizes go from 20 to 32/);
  });

  it('refuses a /129 and an IPv6 block larger than its pool, naming the field', () => {
    refused(() => validateResource(pool('v6', 'fd00:10::/129')), 'spec.cidr', /./);
    refused(() => validateResource(pool('v6', 'fd00:10::/64', 129)), 'spec.blockSize', /./);
    refused(() => validateResource(pool('v6', 'fd00:10::/124', 122)), 'spec.blockSize', /do not fit in the \/124 pool/);
  });

  it('refuses an IPv6 pool overlapping a stored one and writes nothing', async () => {
    const ds = memoryDatastore();
    await ds.create(validateResource(pool('a', 'fd00:10::/64')));
    const before = await ds.revision();
    await refusedAsync(ds.create(validateResource(pool('b', 'fd00:10:0:0:8000::/65'))), 'spec.cidr', /overlaps pool a \(fd00:10::\/64\)/);
    await refusedAsync(ds.apply(validateResource(pool('c', 'fd00::/16'))), 'spec.cidr', /overlaps pool a/);
    assert.equal(await ds.revision(), before);
    assert.deepEqual(
      (await ds.list('IPPool')).items.map((p) => p.metadata.name),
      ['a'],
    );
    // An IPv4 pool never overlaps an IPv6 one.
    await ds.create(validateResource(pool('v4', '10.9.0.0/16')));
  });

  it('apply -f: a good pool then an overlapping one leaves neither written', async () => {
    const ds = memoryDatastore();
    await ds.create(validateResource(pool('a', 'fd00:10::/64')));
    const before = await ds.revision();
    const out: string[] = [];
    const err: string[] = [];
    const io = { stdout: (s: string) => out.push(s), stderr: (s: string) => err.push(s) };
    const file = join(dir, 'pools.yaml');
    // The second overlaps the stored pool.
    writeFileSync(
      file,
      'kind: IPPool\nmetadata: {name: good}\nspec: {cidr: fd00:20::/64}\n---\nkind: IPPool\nmetadata: {name: bad}\nspec: {cidr: fd00:10::/100}\n',
    );
    assert.equal(await runDatastoreCommand(['apply', '-f', file], io, ds), 1);
    assert.match(err.join(''), /IPPool\/bad: spec\.cidr: fd00:10::\/100 overlaps pool a/);
    // The second overlaps the first of the same file.
    writeFileSync(
      file,
      'kind: IPPool\nmetadata: {name: good}\nspec: {cidr: fd00:20::/64}\n---\nkind: IPPool\nmetadata: {name: bad}\nspec: {cidr: fd00:20::/96}\n',
    );
    assert.equal(await runDatastoreCommand(['apply', '-f', file], io, ds), 1);
    assert.match(err.join(''), /IPPool\/bad: spec\.cidr: fd00:20::\/96 overlaps pool good/);
    // The second has an IPv4 block size.
    writeFileSync(
      file,
      'kind: IPPool\nmetadata: {name: good}\nspec: {cidr: fd00:20::/64}\n---\nkind: IPPool\nmetadata: {name: bad}\nspec: {cidr: fd00:30::/64, blockSize: 26}\n',
    );
    assert.equal(await runDatastoreCommand(['apply', '-f', file], io, ds), 1);
    assert.match(err.join(''), /spec\.blockSize: 26 is out of range/);
    assert.equal(out.join(''), '');
    assert.equal(await ds.revision(), before);
    assert.deepEqual(
      (await ds.list('IPPool')).items.map((p) => p.metadata.name),
      ['a'],
    );
  });

  it('apply -f: re-applying a stored pool beside a new one is no overlap', async () => {
    const ds = memoryDatastore();
    await ds.create(validateResource(pool('a', 'fd00:10::/64')));
    const file = join(dir, 'again.yaml');
    writeFileSync(
      file,
      'kind: IPPool\nmetadata: {name: a}\nspec: {cidr: fd00:10::/64}\n---\nkind: IPPool\nmetadata: {name: b}\nspec: {cidr: fd00:11::/64}\n',
    );
    const io = { stdout: () => {}, stderr: (s: string) => assert.fail(s) };
    assert.equal(await runDatastoreCommand(['apply', '-f', file], io, ds), 0);
    assert.deepEqual(
      (await ds.list('IPPool')).items.map((p) => p.metadata.name),
      ['a', 'b'],
    );
  });
  it('apply -f against Redis: a file whose last pool overlaps writes nothing another client can see', async function () {
    this.timeout(30_000);
    const redis = await startRedis();
    const ds = await redisDatastore({ url: redis.url });
    const other = await redisDatastore({ url: redis.url });
    try {
      await ds.create(validateResource(pool('a', 'fd00:10::/64')));
      const before = await other.revision();
      const file = join(dir, 'redis.yaml');
      writeFileSync(
        file,
        'kind: IPPool\nmetadata: {name: g1}\nspec: {cidr: fd00:40::/64}\n---\nkind: IPPool\nmetadata: {name: g2}\nspec: {cidr: 10.40.0.0/16}\n---\n' +
          'kind: IPPool\nmetadata: {name: bad}\nspec: {cidr: "fd00:10::/56"}\n',
      );
      const err: string[] = [];
      const code = await runDatastoreCommand(['apply', '-f', file], { stdout: () => {}, stderr: (s: string) => err.push(s) }, ds);
      assert.equal(code, 1);
      assert.match(err.join(''), /IPPool\/bad: spec\.cidr: fd00:10::\/56 overlaps pool a/);
      assert.equal(await other.revision(), before);
      assert.deepEqual(
        (await other.list('IPPool')).items.map((p) => p.metadata.name),
        ['a'],
      );
    } finally {
      await other.close();
      await ds.close();
      await redis.stop();
    }
  });
});
