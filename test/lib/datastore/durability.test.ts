// Each backend's own answer to "does this store keep what it acknowledged, and how".
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openFileDatastore } from '../../../lib/datastore/file.js';
import { BackendDatastore, etcdDatastore, MemoryBackend, redisDatastore, type Durability } from '../../../lib/datastore/index.js';
import { startEtcd } from '../../support/etcd.js';
import { startRedis, type RedisServerOptions } from '../../support/redis.js';

describe('datastore durability, as each backend answers it', function () {
  this.timeout(60_000);

  it('memory: not durable', async () => {
    const ds = new BackendDatastore(new MemoryBackend());
    assert.deepEqual(await ds.durability(), { store: 'memory', durable: false });
  });

  it('file: durable, and names its file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'podroute-durability-'));
    try {
      const path = join(dir, 'datastore.json');
      const ds = await openFileDatastore(path);
      try {
        assert.deepEqual(await ds.durability(), { store: 'file', durable: true, path });
      } finally {
        await ds.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  async function onRedis(options: RedisServerOptions): Promise<Durability> {
    const redis = await startRedis(options);
    try {
      const ds = await redisDatastore({ url: redis.url, name: 'durability' });
      try {
        return await ds.durability();
      } finally {
        await ds.close();
      }
    } finally {
      await redis.stop();
    }
  }

  it('redis with an append-only file fsynced on every write: durable, aof', async () => {
    const d = await onRedis({ persist: true });
    assert.ok(d.store === 'redis', `answered by ${d.store}`);
    assert.deepEqual([d.durable, d.mode, d.persistence.appendonly, d.persistence.risk], [true, 'aof', 'yes', undefined]);
  });

  it('redis with RDB snapshots alone: not durable, rdb, and the risk says what a restart loses', async () => {
    const d = await onRedis({ args: ['--save', '900 1'] });
    assert.ok(d.store === 'redis', `answered by ${d.store}`);
    assert.deepEqual([d.durable, d.mode, d.persistence.save], [false, 'rdb', '900 1']);
    assert.match(d.persistence.risk ?? '', /only by RDB snapshots/);
  });

  it('redis without persistence: not durable, none', async () => {
    const d = await onRedis({});
    assert.ok(d.store === 'redis', `answered by ${d.store}`);
    assert.deepEqual([d.durable, d.mode], [false, 'none']);
    assert.match(d.persistence.risk ?? '', /no persistence/);
  });

  it('redis that will not show its configuration: the question is refused, not answered "durable"', async () => {
    const redis = await startRedis({ args: ['--rename-command', 'CONFIG', ''] });
    try {
      const ds = await redisDatastore({ url: redis.url, name: 'durability' });
      try {
        await assert.rejects(ds.durability(), /unknown command 'config'/i);
      } finally {
        await ds.close();
      }
    } finally {
      await redis.stop();
    }
  });

  it('etcd: durable, with its member count', async () => {
    const etcd = await startEtcd();
    try {
      const ds = await etcdDatastore({ endpoints: etcd.endpoints, name: 'durability' });
      try {
        assert.deepEqual(await ds.durability(), { store: 'etcd', durable: true, members: 1 });
      } finally {
        await ds.close();
      }
    } finally {
      await etcd.stop();
    }
  });
});
