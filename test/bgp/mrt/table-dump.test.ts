// TABLE_DUMP_V2 (RFC 6396 §4.3, RFC 8050) read as bgpdump reads it:
// - a RIB dump GoBGP wrote as a collector (test/data/gobgp-table-dump-v2.mrt: two speakers, one
//   over IPv4 and one over IPv6 with a 4-octet AS, sending IPv4 and IPv6 routes with communities,
//   well-known ones, large communities, MED, an aggregator) printed with `-m -l` equals the
//   lines bgpdump 1.6 printed for it (kept beside it), and equals bgpdump run now when installed;
// - the ADD-PATH subtypes, from a file this test writes: path identifiers per entry, the
//   abbreviated MP_REACH_NLRI next hop, peers resolved through the PEER_INDEX_TABLE;
// - BGP4MP from a public collector (test/data/updates.20190101.0000.gz) equals bgpdump -m line
//   for line, IPv6 addresses compared in their RFC 5952 form;
// - damaged records are an MrtFormatError, never a wrong route.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MrtFormatError, readMrt, readMrtFile, type MrtRecord, type MrtRib } from '../../../bgp/index.js';
import { formatAddress, parseAddress } from '../../../ip/index.js';
import { bgpdumpLines } from '../../../lib/cli/mrt-bgpdump.js';

const DATA = join(import.meta.dirname, '../../data');
const GOBGP_DUMP = join(DATA, 'gobgp-table-dump-v2.mrt');
const hasBgpdump = spawnSync('bgpdump', ['-T'], { stdio: 'ignore' }).error === undefined;

const ours = (file: string, large: boolean): string[] => [...readMrtFile(file)].flatMap((r) => bgpdumpLines(r, { large }));
const bgpdump = (file: string, ...flags: string[]): string[] => {
  const r = spawnSync('bgpdump', ['-q', '-m', ...flags, file], { encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter((l) => l !== '');
};
/** bgpdump prints IPv6 with inet_ntop, which may fold a single zero group; ip/ follows RFC 5952. */
const canonical = (line: string): string =>
  line
    .split('|')
    .map((f) => {
      if (!f.includes(':') || f.includes(' ') || f.includes('/')) return f;
      try {
        return formatAddress(parseAddress(f));
      } catch {
        return f;
      }
    })
    .join('|');

// ---- a tiny TABLE_DUMP_V2 writer, for the subtypes GoBGP does not write ----
const u16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const ip = (a: string) => Buffer.from(parseAddress(a).bytes);
const record = (type: number, subtype: number, body: Buffer, time = 1700000000) =>
  Buffer.concat([u32(time), u16(type), u16(subtype), u32(body.length), body]);
const attr = (flags: number, type: number, value: Buffer) => Buffer.concat([Buffer.from([flags, type, value.length]), value]);
const peerIndexTable = (peers: { id: string; address: string; asn: number }[]) =>
  record(
    13,
    1,
    Buffer.concat([
      ip('192.0.2.254'),
      u16(4),
      Buffer.from('view'),
      u16(peers.length),
      ...peers.map((p) => {
        const v6 = p.address.includes(':');
        return Buffer.concat([Buffer.from([(v6 ? 1 : 0) | 2]), ip(p.id), ip(p.address), u32(p.asn)]);
      }),
    ]),
  );
const ribAddPath = (
  v6: boolean,
  prefix: string,
  entries: { peer: number; pathId: number; asns: number[]; nextHop: string; communities?: [number, number][] }[],
) => {
  const [addr, len] = prefix.split('/');
  const bits = Number(len);
  const octets = ip(addr!).subarray(0, (bits + 7) >> 3);
  return record(
    13,
    v6 ? 10 : 8,
    Buffer.concat([
      u32(7),
      Buffer.from([bits]),
      octets,
      u16(entries.length),
      ...entries.map((e) => {
        const attrs = Buffer.concat([
          attr(0x40, 1, Buffer.from([0])),
          attr(0x40, 2, Buffer.concat([Buffer.from([2, e.asns.length]), ...e.asns.map(u32)])),
          v6 ? attr(0x80, 14, Buffer.concat([Buffer.from([16]), ip(e.nextHop)])) : attr(0x40, 3, ip(e.nextHop)),
          ...(e.communities ? [attr(0xc0, 8, Buffer.concat(e.communities.map(([a, b]) => Buffer.concat([u16(a), u16(b)]))))] : []),
        ]);
        return Buffer.concat([u16(e.peer), u32(1699999999), u32(e.pathId), u16(attrs.length), attrs]);
      }),
    ]),
  );
};

describe('MRT TABLE_DUMP_V2', () => {
  it("GoBGP's RIB dump: podroute mrt -m -l prints what bgpdump printed for it", () => {
    const expected = readFileSync(join(DATA, 'gobgp-table-dump-v2.bgpdump-ml.txt'), 'utf8').split('\n').filter(Boolean);
    assert.equal(expected.length, 8);
    assert.deepEqual(ours(GOBGP_DUMP, true), expected);
  });

  it('podroute mrt -m -l prints those lines; -l without -m is refused', () => {
    const cli = (...args: string[]) => spawnSync('node', ['bin/podroute.js', 'mrt', ...args], { encoding: 'utf8' });
    const r = cli('-m', '-l', GOBGP_DUMP);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, readFileSync(join(DATA, 'gobgp-table-dump-v2.bgpdump-ml.txt'), 'utf8'));
    const json = cli(GOBGP_DUMP)
      .stdout.trimEnd()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as { rib?: { prefix: string; entries: { attributes: { communities?: string[]; largeCommunities?: string[] } }[] } },
      );
    const rib = json.find((l) => l.rib?.prefix === '10.1.0.0/24' && l.rib.entries.length === 2)!.rib!;
    assert.deepEqual(rib.entries[1]!.attributes.communities, ['65000:100', '65535:0', '65535:666']);
    assert.deepEqual(rib.entries[1]!.attributes.largeCommunities, ['65000:1:2', '4200000000:3:4']);
    const bad = cli('-l', GOBGP_DUMP);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /-l goes with -m/);
  });

  it("GoBGP's RIB dump: the same as bgpdump now, with and without -l", function () {
    if (!hasBgpdump) this.skip();
    assert.deepEqual(ours(GOBGP_DUMP, true), bgpdump(GOBGP_DUMP, '-l'));
    assert.deepEqual(ours(GOBGP_DUMP, false), bgpdump(GOBGP_DUMP));
  });

  it("GoBGP's RIB dump: the peer table, families, and communities as numbers", () => {
    const records = [...readMrtFile(GOBGP_DUMP)];
    const table = records[0]!;
    assert.equal(table.kind, 'peer-index');
    assert.deepEqual(table.kind === 'peer-index' && table.peers.slice(1), [
      { bgpId: '10.0.0.2', address: '10.255.0.2', asn: 65001 },
      { bgpId: '10.0.0.3', address: 'fd00:255::3', asn: 4200000002 },
    ]);
    const ribs = records.filter((r): r is MrtRib => r.kind === 'rib');
    assert.deepEqual(
      ribs.map((r) => `${r.family} ${r.prefix} ${r.entries.length}`),
      [
        'ipv4-unicast 0.0.0.0/0 1',
        'ipv6-unicast 2001:db8:1::/48 1',
        'ipv6-unicast 2001:db8:2::/48 1',
        'ipv4-unicast 10.1.0.0/24 2',
        'ipv4-unicast 10.2.0.0/16 1',
        'ipv4-unicast 10.3.0.0/24 1',
        'ipv4-unicast 10.4.0.0/24 1',
      ],
    );
    const e = ribs[3]!.entries[1]!;
    assert.equal(e.peer?.asn, 65001);
    assert.deepEqual(e.attributes.communities, [65000 * 65536 + 100, 0xffff0000, 0xffff029a]);
    assert.deepEqual(e.attributes.largeCommunities, [
      [65000, 1, 2],
      [4200000000, 3, 4],
    ]);
    assert.equal(ribs[2]!.entries[0]!.nextHop, 'fd00:255::3');
  });

  it('ADD-PATH subtypes: path identifiers, abbreviated MP_REACH next hops, peers by index', () => {
    const file = Buffer.concat([
      peerIndexTable([
        { id: '10.0.0.1', address: '192.0.2.1', asn: 65001 },
        { id: '10.0.0.2', address: '2001:db8::2', asn: 4200000000 },
      ]),
      ribAddPath(false, '198.51.100.0/24', [
        { peer: 0, pathId: 1, asns: [65001, 65010], nextHop: '192.0.2.1', communities: [[65001, 100]] },
        { peer: 0, pathId: 2, asns: [65001, 65020], nextHop: '192.0.2.11' },
      ]),
      ribAddPath(true, '2001:db8:100::/40', [{ peer: 1, pathId: 9, asns: [4200000000], nextHop: '2001:db8::2' }]),
    ]);
    const records = [...readMrt(file)];
    assert.deepEqual(
      records.map((r) => r.kind),
      ['peer-index', 'rib', 'rib'],
    );
    const [v4, v6] = records.slice(1) as MrtRib[];
    assert.equal(v4!.addPath, true);
    assert.equal(v4!.prefix, '198.51.100.0/24');
    assert.deepEqual(
      v4!.entries.map((e) => [e.pathId, e.peer?.address, e.nextHop, e.attributes.asPath?.[0]?.asns]),
      [
        [1, '192.0.2.1', '192.0.2.1', [65001, 65010]],
        [2, '192.0.2.1', '192.0.2.11', [65001, 65020]],
      ],
    );
    assert.deepEqual(
      [v6!.family, v6!.prefix, v6!.entries[0]!.pathId, v6!.entries[0]!.peer?.asn, v6!.entries[0]!.nextHop],
      ['ipv6-unicast', '2001:db8:100::/40', 9, 4200000000, '2001:db8::2'],
    );
    assert.equal(v6!.entries[0]!.problems, undefined);
    assert.deepEqual(bgpdumpLines(v4!), [
      'TABLE_DUMP2_AP|1700000000|B|192.0.2.1|65001|198.51.100.0/24|1|65001 65010|IGP|192.0.2.1|0|0|65001:100|NAG||',
      'TABLE_DUMP2_AP|1700000000|B|192.0.2.1|65001|198.51.100.0/24|2|65001 65020|IGP|192.0.2.11|0|0||NAG||',
    ]);
    if (hasBgpdump) {
      const dir = mkdtempSync(join(tmpdir(), 'podroute-mrt-'));
      try {
        writeFileSync(join(dir, 'addpath.mrt'), file);
        const theirs = spawnSync('bgpdump', ['-q', '-m', join(dir, 'addpath.mrt')], { encoding: 'utf8' });
        // bgpdump 1.6 reads the RFC 8050 subtypes (TABLE_DUMP2_AP lines): it must agree with us.
        assert.equal(theirs.status, 0, theirs.stderr);
        assert.deepEqual(
          [...readMrt(file)].flatMap((r: MrtRecord) => bgpdumpLines(r)),
          theirs.stdout.split('\n').filter(Boolean),
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });

  it('damaged records are refused, not misread', () => {
    const table = peerIndexTable([{ id: '10.0.0.1', address: '192.0.2.1', asn: 65001 }]);
    const rib = ribAddPath(false, '198.51.100.0/24', [{ peer: 0, pathId: 1, asns: [1], nextHop: '192.0.2.1' }]);
    // A RIB record whose entry count promises more than it holds.
    const short = Buffer.from(rib);
    short.writeUInt16BE(5, 12 + 4 + 1 + 3);
    assert.throws(() => [...readMrt(Buffer.concat([table, short]))], MrtFormatError);
    // A prefix length past 32.
    const long = Buffer.from(rib);
    long[12 + 4] = 33;
    assert.throws(() => [...readMrt(Buffer.concat([table, long]))], /prefix length 33/);
    // A peer table cut inside its first peer.
    const cut = Buffer.from(table.subarray(0, table.length - 3));
    cut.writeUInt32BE(cut.length - 12, 8);
    assert.throws(() => [...readMrt(cut)], /peer 0 cut short/);
  });
});

describe('MRT BGP4MP as bgpdump -m prints it', () => {
  it('a public collector hour: every line the same as bgpdump', function () {
    if (!hasBgpdump) this.skip();
    const file = join(DATA, 'updates.20190101.0000.gz');
    const theirs = bgpdump(file).map(canonical);
    const mine = ours(file, false).map(canonical);
    assert.equal(mine.length, theirs.length);
    const firstDiff = mine.findIndex((l, i) => l !== theirs[i]);
    assert.equal(firstDiff, -1, `line ${firstDiff + 1}:\n ours ${mine[firstDiff]}\n bgpdump ${theirs[firstDiff]}`);
  });
});
