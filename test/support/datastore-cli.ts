// `podroute apply/get/delete` against each store the CLI writes to, for the tests of a family of
// resource kinds: the memory store, the embedded file, a real Redis and a real etcd (one server
// each, started by the suite and stopped after it). The suite's tests get the CLI bound to the
// store and a file to write manifests to.
//
//   onEveryStore('datastore: policy kinds through podroute apply/get/delete', MANIFESTS, (t) => {
//     it('…', async () => { await t.cli('apply', '-f', t.file); … t.ds … });
//   });
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runDatastoreCommand } from '../../lib/cli/datastore.js';
import { type BackendDatastore, etcdDatastore, memoryDatastore, openFileDatastore, redisDatastore } from '../../lib/datastore/index.js';
import { type EtcdServer, startEtcd } from './etcd.js';
import { type RedisServer, startRedis } from './redis.js';

export interface StoreCli {
  /** The suite's store, open from its before hook on. */
  readonly ds: BackendDatastore;
  /** A file in the suite's own folder; it holds the manifests when the suite starts. */
  readonly file: string;
  /** What the last command printed, by line written. */
  readonly out: string[];
  readonly err: string[];
  readonly io: { stdout(s: string): void; stderr(s: string): void };
  /** `podroute <argv>` that must exit 0: its stdout. */
  cli(...argv: string[]): Promise<string>;
  /** `podroute <argv>`: its exit code (out and err hold what it printed). */
  run(...argv: string[]): Promise<number>;
}

function storeCli(open: () => Promise<BackendDatastore>, manifests: string): StoreCli {
  const out: string[] = [];
  const err: string[] = [];
  // Made in the hook, not here: a describe body runs even when --grep leaves its hooks out.
  let dir: string | undefined;
  let ds: BackendDatastore | undefined;
  const t: StoreCli = {
    get ds(): BackendDatastore {
      if (!ds) throw new Error('the store is opened in the suite’s before hook');
      return ds;
    },
    get file(): string {
      if (!dir) throw new Error('the manifests file is written in the suite’s before hook');
      return join(dir, 'manifests.yaml');
    },
    out,
    err,
    io: { stdout: (s) => out.push(s), stderr: (s) => err.push(s) },
    run: (...argv) => {
      out.length = 0;
      err.length = 0;
      return runDatastoreCommand(argv, t.io, t.ds);
    },
    cli: async (...argv) => {
      const code = await t.run(...argv);
      assert.equal(code, 0, `${argv.join(' ')}: ${err.join('')}`);
      return out.join('');
    },
  };
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'podroute-cli-store-'));
    ds = await open();
    writeFileSync(t.file, manifests);
  });
  after(async () => {
    await ds?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return t;
}

/** The suite `body` four times: on the memory store, the file store, a real Redis and a real etcd. */
export function onEveryStore(title: string, manifests: string, body: (t: StoreCli) => void): void {
  describe(`${title} (memory)`, () => {
    body(storeCli(async () => memoryDatastore(), manifests));
  });

  describe(`${title} (file)`, () => {
    let dir: string | undefined;
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'podroute-cli-file-'));
    });
    body(storeCli(async () => openFileDatastore(join(dir!, 'datastore.json')), manifests));
    // After the store's own after hook, which closes (and so writes) the file.
    after(() => {
      if (dir) rmSync(dir, { recursive: true, force: true });
    });
  });

  describe(`${title} (real Redis)`, function () {
    this.timeout(60_000);
    let redis: RedisServer | undefined;
    before(async () => {
      redis = await startRedis();
    });
    body(storeCli(async () => redisDatastore({ url: redis!.url, name: `cli${process.pid}` }), manifests));
    // After the store's own after hook: the client closes before its server goes.
    after(async () => {
      await redis?.stop();
    });
  });

  describe(`${title} (real etcd)`, function () {
    this.timeout(60_000);
    let etcd: EtcdServer | undefined;
    before(async () => {
      etcd = await startEtcd();
    });
    body(storeCli(async () => etcdDatastore({ endpoints: etcd!.endpoints, name: `cli${process.pid}` }), manifests));
    after(async () => {
      await etcd?.stop();
    });
  });
}
