// The stale-entry filters applied over ctnetlink to real entries (root): datagrams through DNATs
// in a namespace the test makes, then the filters of an endpoint gone (by frontend, and by
// nodePort on any address) and of a port that had no endpoint; what no filter names stays.
import assert from 'node:assert/strict';
import { type ConntrackEntry, Ctnetlink, IPPROTO_UDP } from '../../../felix/netlink/ctnetlink.js';
import { loadNative, nativeLoadError } from '../../../felix/netlink/native.js';
import type { ConntrackFilter } from '../../../felix/services/conntrack.js';
import { NetlinkConntrackCleaner } from '../../../felix/services/conntrack-netlink.js';
import { ConntrackLab } from '../../support/conntrack-lab.js';

const short = (e: ConntrackEntry) => `${e.orig.dst} ${e.orig.dstPort} ${e.reply.src}`;

describe('felix services: stale UDP entries deleted over ctnetlink (root)', function () {
  this.timeout(20_000);
  let lab: ConntrackLab;
  let ct: Ctnetlink;

  const send = () =>
    lab.send([
      { host: '10.96.0.10', port: 53, count: 2 }, // DNATed to the endpoint that leaves
      { host: '10.96.0.12', port: 53, count: 2 }, // another frontend, DNATed to one that stays
      { host: '10.96.0.20', port: 30053, count: 2 }, // the nodePort, on two addresses
      { host: '10.96.0.21', port: 30053, count: 2 },
      { host: '10.96.0.11', port: 53, count: 2 }, // no DNAT: the port had no endpoint
      { host: 'fd00:96::10', port: 53, count: 2 },
      { host: 'fd00:96::11', port: 53, count: 2 },
    ]);
  const filters: ConntrackFilter[] = [
    { family: 4, protocol: 'udp', origDst: '10.96.0.10', origDstPort: 53, replySrc: '10.1.0.2' },
    { family: 4, protocol: 'udp', origDst: '10.96.0.12', origDstPort: 53, replySrc: '10.1.0.2' },
    { family: 4, protocol: 'udp', origDstPort: 30053, replySrc: '10.1.0.2' },
    { family: 4, protocol: 'udp', origDst: '10.96.0.11', origDstPort: 53, replySrc: '10.96.0.11' },
    { family: 6, protocol: 'udp', origDst: 'fd00:96:0::10', origDstPort: 53, replySrc: 'fd00:1::2' },
  ];
  const left = async () => [
    ...(await ct.list({ family: 4, protocol: IPPROTO_UDP })).map(short),
    ...(await ct.list({ family: 6, protocol: IPPROTO_UDP })).map(short),
  ];

  before(() => {
    if (!loadNative()) throw new Error(nativeLoadError());
    lab = ConntrackLab.create('fxsct', [
      { family: 4, dst: '10.96.0.10', port: 53, to: '10.1.0.2:5353' },
      { family: 4, dst: '10.96.0.12', port: 53, to: '10.1.0.3:5353' },
      { family: 4, port: 30053, to: '10.1.0.2:5353' },
      { family: 6, dst: 'fd00:96::10', port: 53, to: '[fd00:1::2]:5353' },
    ]);
    ct = Ctnetlink.open({ netns: lab.path });
  });
  after(() => {
    ct?.close();
    lab?.destroy();
  });

  it("deletes the entries the filters name, IPv4 and IPv6, and only those: a nodePort's on any address", async () => {
    send();
    const errors: string[] = [];
    const cleaner = new NetlinkConntrackCleaner({ netns: lab.name, onError: (e) => errors.push(e) });
    assert.equal(await cleaner.clear(filters), 10, 'two entries each: 10.96.0.10, 10.96.0.11, the nodePort on two addresses, fd00:96::10');
    assert.deepEqual((await left()).sort(), [...Array(2).fill('10.96.0.12 53 10.1.0.3'), ...Array(2).fill('fd00:96::11 53 fd00:96::11')]);
    assert.equal(await cleaner.clear(filters), 0, 'nothing left to delete');
    assert.equal(cleaner.deleted, 10, 'the count of deleted entries');
    assert.deepEqual(errors, []);
  });

  it('past a few ports, one dump of the family matched in the process: the same entries', async () => {
    send();
    const many = [
      ...filters,
      ...[60, 61, 62, 63, 64].map(
        (port): ConntrackFilter => ({ family: 4, protocol: 'udp', origDst: '10.96.0.10', origDstPort: port, replySrc: '10.1.0.2' }),
      ),
    ];
    const errors: string[] = [];
    const cleaner = new NetlinkConntrackCleaner({ netns: lab.path, onError: (e) => errors.push(e) });
    assert.equal(await cleaner.clear(many), 10, 'the same ten');
    assert.deepEqual((await left()).sort(), [...Array(4).fill('10.96.0.12 53 10.1.0.3'), ...Array(4).fill('fd00:96::11 53 fd00:96::11')]);
    assert.deepEqual(errors, []);
  });

  it('in a namespace that is not there: reported with its errno named, nothing thrown', async () => {
    const errors: string[] = [];
    const cleaner = new NetlinkConntrackCleaner({ netns: `${lab.name}-none`, onError: (e) => errors.push(e) });
    assert.equal(await cleaner.clear(filters), 0);
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(errors[0]!, /^conntrack: ctnetlink socket in \/var\/run\/netns\/.*-none: ENOENT: /);
  });
});

describe('felix services: a cleanup over ctnetlink leaves the event loop free (root)', function () {
  this.timeout(20_000);
  let lab: ConntrackLab;
  const TABLE = 30_000;

  before(async () => {
    if (!loadNative()) throw new Error(nativeLoadError());
    lab = ConntrackLab.create('fxsctl', []);
    // A busy node's table: the kernel walks all of it for any dump, however narrow.
    await lab.insert(TABLE, { dst: '10.96.1.1', port: 5000, endpoint: '10.1.0.9', endpointPort: 5000 });
  });
  after(() => lab?.destroy());

  /** How often a 1 ms timer fired while `f` ran, and what `f` resolved with. */
  async function ticksDuring<T>(f: () => Promise<T>): Promise<{ ticks: number; value: T; ms: number }> {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const t0 = performance.now();
    try {
      const value = await f();
      return { ticks, value, ms: performance.now() - t0 };
    } finally {
      clearInterval(timer);
    }
  }

  const stale = (port: number): ConntrackFilter => ({
    family: 4,
    protocol: 'udp',
    origDst: '10.96.0.10',
    origDstPort: port,
    replySrc: '10.1.0.2',
  });

  it("one port's stale entries: the timer fires while the kernel walks the table (the dump's send, off the event loop)", async () => {
    const errors: string[] = [];
    const cleaner = new NetlinkConntrackCleaner({ netns: lab.name, onError: (e) => errors.push(e) });
    // The walk takes a few milliseconds here; on a machine busy with other work the event loop's
    // thread may not be given a CPU for that long, so a few tries.
    const tries: string[] = [];
    for (let port = 53; port < 56; port++) {
      await lab.insert(2, { dst: '10.96.0.10', port, endpoint: '10.1.0.2', endpointPort: 5353 });
      const { ticks, value, ms } = await ticksDuring(() => cleaner.clear([stale(port)]));
      assert.equal(value, 2, `the two stale entries of port ${port}`);
      tries.push(`${ticks} in ${ms.toFixed(1)} ms`);
      if (ticks > 0) break;
    }
    assert.ok(!tries.at(-1)!.startsWith('0 '), `the timer never fired during a cleanup: ${tries.join(', ')}`);
    assert.deepEqual(errors, []);
  });

  it('past a few ports, one dump of the family: read a part at a time, the timer firing between parts', async () => {
    const errors: string[] = [];
    const cleaner = new NetlinkConntrackCleaner({ netns: lab.name, onError: (e) => errors.push(e) });
    await lab.insert(2, { dst: '10.96.0.10', port: 60, endpoint: '10.1.0.2', endpointPort: 5353 });
    const { ticks, value, ms } = await ticksDuring(() => cleaner.clear([60, 61, 62, 63, 64].map(stale)));
    assert.equal(value, 2, `the two stale entries among the ${TABLE} read`);
    // 30,000 entries are about 40 parts of 128 KiB.
    assert.ok(ticks >= 5, `the timer fired ${ticks} times in ${ms.toFixed(1)} ms`);
    assert.deepEqual(errors, []);
  });
});
