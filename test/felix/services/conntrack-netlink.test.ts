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
  const left = () => [
    ...ct.list({ family: 4, protocol: IPPROTO_UDP }).map(short),
    ...ct.list({ family: 6, protocol: IPPROTO_UDP }).map(short),
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
    assert.deepEqual(left().sort(), [...Array(2).fill('10.96.0.12 53 10.1.0.3'), ...Array(2).fill('fd00:96::11 53 fd00:96::11')]);
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
    assert.deepEqual(left().sort(), [...Array(4).fill('10.96.0.12 53 10.1.0.3'), ...Array(4).fill('fd00:96::11 53 fd00:96::11')]);
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
