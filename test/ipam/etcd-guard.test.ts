// The store-identity guard on etcd: a member that comes back with an empty data dir (a lost
// disk, a wiped single-member cluster) is a store that forgot every allocation. IPAM refuses to
// allocate from it until `ipam repair` has rebuilt the allocations from the WorkloadEndpoints.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  API_VERSION,
  etcdDatastore,
  type BackendDatastore,
  type IPPool,
  type Node,
  type WorkloadEndpoint,
} from '../../lib/datastore/public.js';
import { fileIdentityRecord, Ipam, IpamError, repairIpam } from '../../lib/ipam/index.js';
import { startEtcd, type EtcdServer } from '../support/etcd.js';

const pool: IPPool = {
  apiVersion: API_VERSION,
  kind: 'IPPool',
  metadata: { name: 'p' },
  spec: { cidr: '10.21.0.0/26', blockSize: 28, ipipMode: 'Never', vxlanMode: 'Never' },
};
const node = (name: string): Node => ({ apiVersion: API_VERSION, kind: 'Node', metadata: { name }, spec: {} });
const wep = (i: number, nodeName: string, ip: string): WorkloadEndpoint => ({
  apiVersion: API_VERSION,
  kind: 'WorkloadEndpoint',
  metadata: { name: `${nodeName}-k8s-pod${i}-eth0`, namespace: 'default', annotations: { 'podroute.io/container-id': `c${i}` } },
  spec: { node: nodeName, pod: `pod${i}`, workload: `c${i}`, interfaceName: `cali${i}`, ipNetworks: [`${ip}/32`] },
});

describe('ipam: store identity guard on etcd (a member restarted with an empty data dir)', function () {
  this.timeout(60_000);
  let etcd: EtcdServer;
  let ds: BackendDatastore;
  const dir = mkdtempSync(join(tmpdir(), 'podroute-etcd-guard-'));
  before(async () => {
    etcd = await startEtcd();
    ds = await etcdDatastore({ endpoints: etcd.endpoints, commandTimeoutMs: 2000 });
  });
  after(async () => {
    await ds?.close();
    await etcd?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses to allocate from the emptied store, and after repair never hands out a held address', async () => {
    await ds.apply(pool);
    await ds.apply(node('n1'));
    const guarded = (): Ipam => new Ipam(ds, { identity: fileIdentityRecord(join(dir, 'n1.json')) });
    const held = new Set<string>();
    const weps: WorkloadEndpoint[] = [];
    for (let i = 0; i < 20; i++) {
      const a = await guarded().autoAssign({ handle: `c${i}`, node: 'n1' });
      held.add(a.ip);
      weps.push(wep(i, 'n1', a.ip));
      await ds.apply(weps[i]!);
    }
    const before = await ds.raw.identity();

    await etcd.restart({ empty: true });
    const deadline = Date.now() + 15_000;
    for (;;) {
      try {
        if ((await ds.raw.identity()).storeId === null) break;
      } catch (e) {
        if (Date.now() > deadline) throw e;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    await ds.apply(pool);
    await ds.apply(node('n1'));
    assert.notEqual((await ds.raw.identity()).storeId, before.storeId, 'the emptied store got a new id with its first write');

    await assert.rejects(
      guarded().autoAssign({ handle: 'c100', node: 'n1' }),
      (e: unknown) => e instanceof IpamError && e.code === 'StoreReplaced' && /ipam repair/.test(e.message),
    );

    for (const w of weps) await ds.apply({ ...w, metadata: { ...w.metadata, resourceVersion: undefined } });
    const report = await repairIpam(ds);
    assert.equal(report.addresses, 20);
    for (let i = 100; i < 200; i++) {
      let ip: string;
      try {
        ip = (await guarded().autoAssign({ handle: `c${i}`, node: 'n1' })).ip;
      } catch (e) {
        if (e instanceof IpamError && e.code === 'Exhausted') break;
        throw e;
      }
      assert.ok(!held.has(ip), `${ip} is held by a pod already`);
      held.add(ip);
    }
    assert.equal(held.size, 64, 'the whole /26 was handed out, each address once');
  });
});
