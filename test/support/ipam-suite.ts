// IPAM behaviour, run unchanged against every backend.
import assert from 'node:assert/strict';
import type { BackendDatastore } from '../../lib/datastore/index.js';
import { Ipam, IpamError, blockAllocations } from '../../lib/ipam/index.js';
import type { Resource } from '../../lib/resources/index.js';
import { node, pool } from './datastore-suite.js';

export function ipamSuite(open: () => Promise<BackendDatastore>): void {
  let ds: BackendDatastore;
  let ipam: Ipam;
  beforeEach(async () => {
    ds = await open();
    ipam = new Ipam(ds);
  });
  afterEach(async () => {
    await ds.close();
  });
  const config = (spec: Record<string, unknown>): Promise<Resource> =>
    ds.apply({ apiVersion: 'projectcalico.org/v3', kind: 'IPAMConfiguration', metadata: { name: 'default' }, spec } as Resource);

  it('claims a block for the node, assigns from it first, claims another when full', async () => {
    await ds.create(pool('p', '10.20.0.0/24', { blockSize: 30 }));
    const got = [];
    for (let i = 0; i < 6; i++) got.push(await ipam.autoAssign({ handle: `h${i}`, node: 'n1' }));
    const blocks = new Set(got.map((g) => g.block));
    assert.equal(blocks.size, 2, 'four addresses per /30: the fifth opens a second block');
    assert.ok(
      got.every((g) => !g.borrowed && g.pool === 'p'),
      `want every address from pool p, not borrowed: ${JSON.stringify(got.map((g) => [g.pool, g.borrowed]))}`,
    );
    assert.equal(new Set(got.map((g) => g.ip)).size, 6);
    const mine = await ipam.blocksForNode('n1');
    assert.deepEqual(
      mine.map((b) => b.affinity),
      ['host:n1', 'host:n1'],
    );
    assert.deepEqual(mine.map((b) => b.used).sort(), [2, 4]);
    assert.deepEqual(await ipam.blocksForNode('n2'), []);
  });

  it('borrows only when the pool has no free block, and never under strict affinity', async () => {
    await ds.create(pool('p', '10.21.0.0/29', { blockSize: 30 })); // two blocks of four
    const a = await ipam.autoAssign({ handle: 'a', node: 'n1' });
    const b = await ipam.autoAssign({ handle: 'b', node: 'n2' });
    assert.notEqual(a.block, b.block);
    // n3 finds no free block: it borrows from one of them, and says so.
    const c = await ipam.autoAssign({ handle: 'c', node: 'n3' });
    assert.ok(c.borrowed, `n3's address ${c.ip} is not marked borrowed`);
    assert.deepEqual(await ipam.blocksForNode('n3'), []);
    const borrowed = await ipam.borrowedAddresses('n3');
    assert.deepEqual(
      borrowed.map((x) => x.ip),
      [c.ip],
    );
    assert.ok(borrowed[0]!.owner === 'n1' || borrowed[0]!.owner === 'n2', `borrowed from ${borrowed[0]?.owner}: want n1 or n2`);
    await config({ strictAffinity: true });
    await assert.rejects(
      ipam.autoAssign({ handle: 'd', node: 'n3' }),
      (e: unknown) => e instanceof IpamError && /strict affinity/.test(e.message),
    );
    // The owners still fill their own blocks.
    assert.equal((await ipam.autoAssign({ handle: 'e', node: 'n1' })).borrowed, false);
  });

  it('releases by handle; an emptied block returns to the pool; addresses are reusable', async () => {
    await ds.create(pool('p', '10.22.0.0/28', { blockSize: 28 }));
    const a = await ipam.autoAssign({ handle: 'pod-a', node: 'n1', attrs: { namespace: 'ns', pod: 'a' } });
    const a6 = await ipam.autoAssign({ handle: 'pod-a', node: 'n1' });
    assert.notEqual(a.ip, a6.ip);
    const b = await ipam.autoAssign({ handle: 'pod-b', node: 'n1' });
    const blk = (await ds.list('IPAMBlock')).items[0]!;
    assert.deepEqual(
      blockAllocations(blk.spec).map((x) => [x.handle, x.attrs.pod ?? null]),
      [
        ['pod-a', 'a'],
        ['pod-a', null],
        ['pod-b', null],
      ],
    );
    assert.deepEqual((await ds.get('IPAMHandle', 'pod-a'))!.spec.block, { '10.22.0.0/28': 2 });
    assert.deepEqual((await ipam.releaseByHandle('pod-a')).sort(), [a.ip, a6.ip].sort());
    assert.deepEqual(await ipam.releaseByHandle('pod-a'), [], 'release is idempotent');
    assert.equal(await ds.get('IPAMHandle', 'pod-a'), undefined);
    const after = (await ds.list('IPAMBlock')).items[0]!;
    assert.equal(after.spec.attributes.length, 1, 'unused attributes are dropped');
    assert.deepEqual(
      blockAllocations(after.spec).map((x) => x.ip),
      [b.ip],
    );
    await ipam.releaseByHandle('pod-b');
    assert.deepEqual((await ds.list('IPAMBlock')).items, [], 'the empty block went back to the pool');
    // Another node can now claim it and get every address.
    const all = [];
    for (let i = 0; i < 16; i++) all.push((await ipam.autoAssign({ handle: `x${i}`, node: 'n2' })).ip);
    assert.equal(new Set(all).size, 16);
    assert.ok(all.includes(a.ip) && all.includes(b.ip), `${a.ip} or ${b.ip} not handed out again: ${all.join(' ')}`);
    await assert.rejects(ipam.autoAssign({ handle: 'y', node: 'n2' }), /no free IPv4 address/);
  });

  it("keeps an emptied affine block with releaseEmptyAffineBlocks: false (Calico's behaviour)", async () => {
    await ds.create(pool('p', '10.23.0.0/24'));
    await config({ releaseEmptyAffineBlocks: false });
    const a = await ipam.autoAssign({ handle: 'a', node: 'n1' });
    await ipam.releaseByHandle('a');
    assert.deepEqual(
      (await ipam.blocksForNode('n1')).map((b) => [b.cidr, b.used]),
      [[a.block, 0]],
    );
    assert.equal((await ipam.autoAssign({ handle: 'b', node: 'n1' })).block, a.block);
  });

  it('IPv6 with /122 blocks by default, and pools chosen by family, selector and name', async () => {
    await ds.create(node('r1-node', { rack: 'r1' }));
    await ds.create(pool('v6', 'fd00:10::/64'));
    await ds.create(pool('rack1', '10.30.0.0/24', { nodeSelector: "rack == 'r1'" }));
    await ds.create(pool('other', '10.31.0.0/24', { nodeSelector: "rack == 'r2'" }));
    await ds.create(pool('off', '10.32.0.0/24', { disabled: true }));
    const v6 = await ipam.autoAssign({ handle: 'h6', node: 'r1-node', family: 6 });
    assert.match(v6.block, /^fd00:10::[0-9a-f:]*\/122$/);
    assert.match(v6.cidr, /\/128$/);
    assert.equal((await ipam.autoAssign({ handle: 'h4', node: 'r1-node' })).pool, 'rack1');
    assert.equal((await ipam.autoAssign({ handle: 'h5', node: 'r1-node', pools: ['other'] })).pool, 'other');
    await assert.rejects(ipam.autoAssign({ handle: 'x', node: 'r1-node', pools: ['off'] }), /pools: IPPool off is disabled/);
    await assert.rejects(ipam.autoAssign({ handle: 'x', node: 'nowhere' }), /no enabled IPv4 IPPool selects node nowhere/);
    assert.deepEqual(await ipam.releaseByHandle('h6'), [v6.ip]);
  });

  it('honours maxBlocksPerHost by borrowing once the node has its blocks', async () => {
    await ds.create(pool('p', '10.40.0.0/24', { blockSize: 30 }));
    await config({ maxBlocksPerHost: 1 });
    for (let i = 0; i < 2; i++) assert.equal((await ipam.autoAssign({ handle: `o${i}`, node: 'n2' })).borrowed, false);
    for (let i = 0; i < 4; i++) await ipam.autoAssign({ handle: `m${i}`, node: 'n1' });
    const fifth = await ipam.autoAssign({ handle: 'm4', node: 'n1' });
    assert.equal(fifth.borrowed, true);
    assert.equal((await ipam.blocksForNode('n1')).length, 1);
  });

  it('several Ipam objects over one datastore share its store: a node keeps filling its block, and release sees every address', async () => {
    await ds.create(pool('p', '10.50.0.0/24', { blockSize: 29 }));
    const others = [new Ipam(ds), new Ipam(ds)];
    const first = await ipam.autoAssign({ handle: 'a', node: 'n1' });
    const got = [first, ...(await Promise.all(others.map((o, i) => o.autoAssign({ handle: `b${i}`, node: 'n1' }))))];
    assert.deepEqual(new Set(got.map((g) => g.block)), new Set([first.block]), 'one /29 serves all three');
    assert.ok(
      got.every((g) => !g.borrowed),
      `an address was borrowed: ${got.map((g) => g.borrowed).join(' ')}`,
    );
    assert.equal(new Set(got.map((g) => g.ip)).size, 3);
    assert.deepEqual(await others[0]!.releaseByHandle('b1'), [got[2]!.ip]);
    const again = await others[1]!.autoAssign({ handle: 'c', node: 'n1' });
    assert.equal(again.block, first.block);
    assert.equal((await ipam.blocksForNode('n1')).length, 1);
  });
}
