// The errno names felix compares and the text a person reads for each.
import assert from 'node:assert/strict';
import { constants } from 'node:os';
import * as errno from '../../felix/errno.js';
import { EEXIST, ENOBUFS, ENODEV, ENOENT, ESRCH, ETIMEDOUT, errnoText, replyLost } from '../../felix/errno.js';
import { MemoryDataplane } from '../../felix/index.js';

const named = Object.entries(errno).filter((e): e is [string, number] => /^E[A-Z]+$/.test(e[0]) && typeof e[1] === 'number');

describe('felix errnos', () => {
  it('each name is the number the Linux kernel answers with', function () {
    if (process.platform !== 'linux') this.skip();
    const linux: Record<string, number> = {
      EPERM: 1,
      ENOENT: 2,
      ESRCH: 3,
      EEXIST: 17,
      ENODEV: 19,
      EINVAL: 22,
      EOPNOTSUPP: 95,
      ENETUNREACH: 101,
      ENOBUFS: 105,
      ETIMEDOUT: 110,
    };
    for (const [name, n] of Object.entries(linux)) assert.equal(Object.fromEntries(named)[name], n, name);
  });

  it('every named errno reads as its own name, then what it means', () => {
    assert.ok(named.length >= 10, `only ${named.length} errnos are named`);
    for (const [name, n] of named) assert.match(errnoText(n), new RegExp(`^${name}: \\S`), name);
    assert.equal(new Set(named.map(([, n]) => n)).size, named.length, 'two names for one number');
  });

  it('a detail takes the place of the generic words, the name stays', () => {
    assert.equal(errnoText(EEXIST), 'EEXIST: File exists');
    assert.equal(errnoText(ENODEV, 'device cali1 does not exist'), 'ENODEV: device cali1 does not exist');
  });

  it("an errno felix has no words for reads by the platform's name, with or without a detail", () => {
    const n = constants.errno.EPROTONOSUPPORT;
    assert.equal(errnoText(n), `EPROTONOSUPPORT (errno ${n})`);
    assert.equal(errnoText(n, 'ctnetlink'), `EPROTONOSUPPORT (errno ${n}): ctnetlink`);
  });

  it('an errno without a name reads as its number', () => {
    assert.equal(errnoText(4095), 'errno 4095');
    assert.equal(errnoText(4095, 'odd'), 'errno 4095: odd');
  });

  it('a lost reply is ENOBUFS or ETIMEDOUT, not a refusal', () => {
    assert.deepEqual([ENOBUFS, ETIMEDOUT, EEXIST, ESRCH, 0].map(replyLost), [true, true, false, false, false]);
  });

  it('the in-memory dataplane fails with the same names and text', async () => {
    const dp = new MemoryDataplane({ links: ['cali1'] });
    const route = (dev: string) => ({ dst: '10.65.0.2/32', type: 'unicast' as const, nextHops: [{ dev }] });
    const out = await dp.writeRoutes(
      [
        { op: 'create', route: route('cali1') },
        { op: 'create', route: route('cali1') },
        { op: 'delete', route: route('cali1'), metric: 0 },
        { op: 'delete', route: route('cali1'), metric: 0 },
        { op: 'replace', route: route('cali9'), metric: 0 },
      ],
      81,
    );
    assert.deepEqual(
      out.map((o) => [o.errno ?? 0, o.error ?? '']),
      [
        [0, ''],
        [EEXIST, 'EEXIST: File exists'],
        [0, ''],
        [ESRCH, 'ESRCH: No such process'],
        [ENODEV, 'ENODEV: device cali9 does not exist'],
      ],
    );
    const [gone] = await dp.writeNeighbors([
      { op: 'delete', neighbor: { kind: 'arp', dev: 'cali1', address: '10.65.0.9', mac: '02:00:00:00:00:09' } },
    ]);
    assert.deepEqual([gone.errno, gone.error], [ENOENT, 'ENOENT: No such file or directory']);
  });
});
