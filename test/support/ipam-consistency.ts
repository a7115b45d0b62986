// Checks that the IPAM state in a store is whole: every address once, blocks and handles agree,
// and (in Redis and etcd) the indexes IPAM keeps match the blocks.
import assert from 'node:assert/strict';
import type { BackendDatastore } from '../../lib/datastore/index.js';
import { EtcdBackend, RedisBackend } from '../../lib/datastore/index.js';
import { blockAllocations } from '../../lib/ipam/index.js';
import { cidrsOverlap, parseCidr } from '../../ip/index.js';

export async function assertIpamConsistent(ds: BackendDatastore): Promise<{ addresses: Map<string, string>; blocks: number }> {
  const blocks = (await ds.list('IPAMBlock')).items;
  const handles = (await ds.list('IPAMHandle')).items;
  const addresses = new Map<string, string>(); // ip -> handle
  const perHandle = new Map<string, Record<string, number>>();
  for (let i = 0; i < blocks.length; i++) {
    for (let j = i + 1; j < blocks.length; j++) {
      assert.ok(
        !cidrsOverlap(parseCidr(blocks[i]!.spec.cidr), parseCidr(blocks[j]!.spec.cidr)),
        `blocks ${blocks[i]!.spec.cidr} and ${blocks[j]!.spec.cidr} overlap`,
      );
    }
  }
  for (const b of blocks) {
    const s = b.spec;
    const used = s.allocations.map((a, i) => (a === null ? -1 : i)).filter((i) => i >= 0);
    assert.deepEqual(
      [...used, ...s.unallocated].sort((x, y) => x - y),
      s.allocations.map((_, i) => i),
      `${s.cidr}: used + free must be every ordinal once`,
    );
    assert.ok(s.affinity === null || /^host:.+/.test(s.affinity), `${s.cidr}: affinity ${s.affinity}`);
    for (const a of blockAllocations(s)) {
      assert.ok(a.handle, `${a.ip} has no handle`);
      assert.ok(!addresses.has(a.ip), `${a.ip} allocated twice`);
      addresses.set(a.ip, a.handle);
      const h = perHandle.get(a.handle) ?? {};
      h[s.cidr] = (h[s.cidr] ?? 0) + 1;
      perHandle.set(a.handle, h);
    }
  }
  assert.equal(handles.length, perHandle.size, 'one IPAMHandle per handle holding addresses');
  for (const h of handles) assert.deepEqual(h.spec.block, perHandle.get(h.metadata.name), `handle ${h.metadata.name} counts`);
  if (ds.raw instanceof RedisBackend) {
    const c = ds.raw.client;
    const P = ds.raw.prefix;
    const free = await c.hgetall(`${P}:ipam:free`);
    const bp = await c.hgetall(`${P}:ipam:bp`);
    assert.deepEqual(Object.keys(free).sort(), blocks.map((b) => b.metadata.name).sort(), 'free index covers exactly the blocks');
    assert.deepEqual(Object.keys(bp).sort(), blocks.map((b) => b.metadata.name).sort(), 'pool index covers exactly the blocks');
    for (const b of blocks) {
      assert.equal(Number(free[b.metadata.name]), b.spec.unallocated.length, `${b.metadata.name} free count`);
      const node = b.spec.affinity?.slice(5);
      if (node)
        assert.equal(await c.sismember(`${P}:ipam:aff:${node}`, b.metadata.name), 1, `${b.metadata.name} in ${node}'s affinity set`);
    }
  }
  if (ds.raw instanceof EtcdBackend) {
    // The affinity index (node -> its blocks and their pools) names exactly the affine blocks.
    const want = new Map<string, string[]>();
    for (const b of blocks) {
      const node = b.spec.affinity?.slice(5);
      if (node) want.set(node, [...(want.get(node) ?? []), b.metadata.name].sort());
    }
    const p = ds.raw.keys.aff('');
    const kvs = await ds.raw.client.getAll().prefix(p).strings();
    const have = new Map(Object.entries(kvs).map(([k, v]) => [k.slice(p.length), Object.keys(JSON.parse(v) as object).sort()]));
    assert.deepEqual(have, want, 'affinity index covers exactly the affine blocks');
  }
  return { addresses, blocks: blocks.length };
}
