// ctnetlink on real conntrack entries (root): datagrams through a DNAT in a namespace the test
// makes, listed by a narrowed dump and deleted by their exact tuples, in that namespace.
import assert from 'node:assert/strict';
import { constants } from 'node:os';
import {
  ConntrackError,
  type ConntrackEntry,
  Ctnetlink,
  ctMsg,
  IPCTNL_MSG_CT_NEW,
  IPPROTO_UDP,
  readConntrackEntry,
  writeConntrackDump,
} from '../../../felix/netlink/ctnetlink.js';
import { loadNative, nativeLoadError } from '../../../felix/netlink/native.js';
import { NETLINK_NETFILTER } from '../../../felix/netlink/nf-constants.js';
import { NetlinkSocket } from '../../../felix/netlink/socket.js';
import { ConntrackLab } from '../../support/conntrack-lab.js';

const short = (e: ConntrackEntry) => `${e.orig.dst} ${e.orig.dstPort} ${e.reply.src} ${e.reply.srcPort}`;

describe('felix ctnetlink: conntrack entries listed and deleted (root)', function () {
  this.timeout(20_000);
  let lab: ConntrackLab;
  let ct: Ctnetlink;

  before(() => {
    if (!loadNative()) throw new Error(nativeLoadError());
    lab = ConntrackLab.create('fxct', [
      { family: 4, dst: '10.96.0.10', port: 53, to: '10.1.0.2:5353' },
      { family: 6, dst: 'fd00:96::10', port: 53, to: '[fd00:1::2]:5353' },
    ]);
    // Three entries to each frontend, three no DNAT touched (to another address, another port) per family.
    lab.send([
      { host: '10.96.0.10', port: 53, count: 3 },
      { host: '10.96.0.11', port: 53, count: 3 },
      { host: '10.96.0.10', port: 54, count: 3 },
      { host: 'fd00:96::10', port: 53, count: 3 },
      { host: 'fd00:96::11', port: 53, count: 3 },
    ]);
    ct = Ctnetlink.open({ netns: lab.path });
  });
  after(() => {
    ct?.close();
    lab?.destroy();
  });

  it('lists the entries a query names: the DNATed ones by frontend, port and the endpoint replying; each read whole', async () => {
    const all = await ct.list({ family: 4, protocol: IPPROTO_UDP });
    assert.equal(all.length, 9, `every IPv4 UDP entry: ${all.map(short).join(', ')}`);
    const dnat = await ct.list({ family: 4, protocol: IPPROTO_UDP, orig: { dst: '10.96.0.10', dstPort: 53 }, reply: { src: '10.1.0.2' } });
    assert.deepEqual(dnat.map(short), Array(3).fill('10.96.0.10 53 10.1.0.2 5353'));
    for (const e of dnat) {
      assert.equal(e.orig.src, '10.1.0.1', 'the client is the namespace itself');
      assert.equal(e.reply.dst, '10.1.0.1', 'replies go back to the client');
      assert.equal(e.reply.dstPort, e.orig.srcPort, "the reply's destination port is the client's");
      assert.equal(e.orig.protocol, IPPROTO_UDP, 'UDP');
      assert.ok(e.id !== 0, 'the kernel numbers each entry');
    }
    assert.equal(new Set(dnat.map((e) => e.orig.srcPort)).size, 3, 'three source ports, three entries');
    // No DNAT: the reply comes from the frontend itself.
    const plain = await ct.list({
      family: 4,
      protocol: IPPROTO_UDP,
      orig: { dst: '10.96.0.11', dstPort: 53 },
      reply: { src: '10.96.0.11' },
    });
    assert.equal(plain.length, 3, plain.map(short).join(', '));
    // By port and reply alone (a nodePort's filter: any address).
    assert.equal((await ct.list({ family: 4, protocol: IPPROTO_UDP, orig: { dstPort: 54 } })).length, 3, 'the entries to port 54');
  });

  it('IPv6: the same, though the kernel is given only the protocol and port (its IPv6 address match is inverted)', async () => {
    const dnat = await ct.list({
      family: 6,
      protocol: IPPROTO_UDP,
      orig: { dst: 'fd00:96::10', dstPort: 53 },
      reply: { src: 'fd00:1::2' },
    });
    assert.deepEqual(dnat.map(short), Array(3).fill('fd00:96::10 53 fd00:1::2 5353'));
    const plain = await ct.list({ family: 6, protocol: IPPROTO_UDP, orig: { dst: 'fd00:96::11' }, reply: { src: 'fd00:96::11' } });
    assert.equal(plain.length, 3, plain.map(short).join(', '));
    // Written in another spelling, an address still matches.
    assert.equal(
      (await ct.list({ family: 6, protocol: IPPROTO_UDP, orig: { dst: 'FD00:96:0::10' } })).length,
      3,
      'the spelling of an address does not matter',
    );
  });

  it('the kernel narrows an IPv4 dump itself (CTA_FILTER): only the matching entries cross the socket', () => {
    const socket = NetlinkSocket.open({ protocol: NETLINK_NETFILTER, netns: lab.path });
    try {
      const w = socket.writer(256);
      writeConntrackDump(w, { family: 4, protocol: IPPROTO_UDP, orig: { dst: '10.96.0.10', dstPort: 53 }, reply: { src: '10.1.0.2' } });
      const sent: string[] = [];
      socket.dump(w, (type, buf, start, end) => {
        if (type === ctMsg(IPCTNL_MSG_CT_NEW)) sent.push(short(readConntrackEntry(buf, start, end)!));
      });
      assert.deepEqual(sent, Array(3).fill('10.96.0.10 53 10.1.0.2 5353'));
    } finally {
      socket.close();
    }
  });

  it('a dump read off the event loop owns its socket: another request is refused, a close waits for it', async () => {
    const socket = NetlinkSocket.open({ protocol: NETLINK_NETFILTER, netns: lab.path });
    const w = socket.writer(256);
    writeConntrackDump(w, { family: 4, protocol: IPPROTO_UDP, orig: { dst: '10.96.0.10', dstPort: 53 }, reply: { src: '10.1.0.2' } });
    const sent: string[] = [];
    const dump = socket.dumpAsync(w, (type, buf, start, end) => {
      if (type === ctMsg(IPCTNL_MSG_CT_NEW)) sent.push(short(readConntrackEntry(buf, start, end)!));
    });
    assert.throws(() => socket.dump(socket.writer(256), () => {}), /busy with a dump/);
    socket.close();
    await dump;
    assert.deepEqual(sent, Array(3).fill('10.96.0.10 53 10.1.0.2 5353'), 'the dump read whole though closed meanwhile');
    assert.throws(() => socket.dump(socket.writer(256), () => {}), /closed/);
  });

  it('deletes exactly the entries given, by tuple and id: the others stay, one gone already is told apart, another id is spared', async () => {
    const dnat = await ct.list({ family: 4, protocol: IPPROTO_UDP, orig: { dst: '10.96.0.10', dstPort: 53 }, reply: { src: '10.1.0.2' } });
    const [first, ...rest] = dnat;
    // An entry of that tuple but another id is not the one read: the kernel keeps it.
    const spared = await ct.delete([{ ...first!, id: (first!.id + 1) >>> 0 }]);
    assert.deepEqual(spared, { deleted: 0, gone: 1, failed: [] });
    assert.deepEqual(await ct.delete(dnat), { deleted: 3, gone: 0, failed: [] });
    assert.deepEqual(await ct.delete(rest), { deleted: 0, gone: 2, failed: [] });
    assert.equal(
      (await ct.list({ family: 4, protocol: IPPROTO_UDP, orig: { dst: '10.96.0.10', dstPort: 53 } })).length,
      0,
      'the DNATed entries are gone',
    );
    assert.equal((await ct.list({ family: 4, protocol: IPPROTO_UDP })).length, 6, 'the six others stay');
    assert.equal((await ct.list({ family: 6, protocol: IPPROTO_UDP })).length, 6, 'IPv6 untouched');
    const v6 = await ct.list({ family: 6, protocol: IPPROTO_UDP, orig: { dst: 'fd00:96::10' } });
    assert.deepEqual(await ct.delete(v6), { deleted: 3, gone: 0, failed: [] });
    assert.equal((await ct.list({ family: 6, protocol: IPPROTO_UDP })).length, 3, 'the IPv6 entries no DNAT touched stay');
  });

  it('errors name their errno', () => {
    assert.throws(
      () => Ctnetlink.open({ netns: `/var/run/netns/${lab.name}-none` }),
      (e: unknown) =>
        e instanceof ConntrackError && e.errno === constants.errno.ENOENT && /^ctnetlink socket in .*-none: ENOENT: /.test(e.message),
    );
  });
});
