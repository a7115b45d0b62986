// The demo prints in-memory routes "as `ip route` prints them": this holds that claim to
// iproute2 itself, by putting the same routes into a real kernel (in a namespace this test
// creates; root only) and reading them back with `ip route show proto 81`.
import assert from 'node:assert/strict';
import type { InstalledRoute } from '../../../felix/index.js';
import { expectedRoutes, ipRouteLine } from '../../../lib/demo/routes.js';
import { Lab, type Netns } from '../../support/netns.js';

const base = { protocol: 81, table: 254, metric: 0 } as const;

const ROUTES: { route: InstalledRoute; add: string[] }[] = [
  {
    route: { ...base, dst: '10.65.1.0/26', type: 'unicast', nextHops: [{ dev: 'eth0', gateway: '10.0.0.2' }] },
    add: ['10.65.1.0/26', 'via', '10.0.0.2', 'dev', 'eth0'],
  },
  { route: { ...base, dst: '10.65.0.0/26', type: 'blackhole', nextHops: [] }, add: ['blackhole', '10.65.0.0/26'] },
  {
    route: { ...base, dst: '10.65.0.5/32', type: 'unicast', nextHops: [{ dev: 'cali1234567890a' }] },
    add: ['10.65.0.5/32', 'dev', 'cali1234567890a', 'scope', 'link'],
  },
  {
    route: { ...base, dst: '10.65.3.0/26', type: 'unicast', nextHops: [{ dev: 'eth0', gateway: '192.0.2.9', onlink: true }] },
    add: ['10.65.3.0/26', 'via', '192.0.2.9', 'dev', 'eth0', 'onlink'],
  },
  {
    route: {
      ...base,
      dst: '10.65.2.0/26',
      type: 'unicast',
      nextHops: [
        { dev: 'eth0', gateway: '10.0.0.2' },
        { dev: 'eth0', gateway: '10.0.0.3' },
      ],
    },
    add: ['10.65.2.0/26', 'nexthop', 'via', '10.0.0.2', 'dev', 'eth0', 'nexthop', 'via', '10.0.0.3', 'dev', 'eth0'],
  },
];

describe('demo routes', () => {
  it('what a node should hold: blackholes for its blocks, other blocks via their node, its pods on their veths', () => {
    const got = expectedRoutes(
      'n1',
      [
        { cidr: '10.65.0.0/26', node: 'n1' },
        { cidr: '10.65.0.64/26', node: 'n2' },
        { cidr: '10.65.9.0/26', node: 'gone' },
      ],
      new Map([
        ['n1', '127.0.0.1'],
        ['n2', '127.0.0.2'],
      ]),
      [
        { node: 'n1', cidr: '10.65.0.1/32', interfaceName: 'calia' },
        { node: 'n2', cidr: '10.65.0.65/32', interfaceName: 'calib' },
      ],
      'eth0',
    );
    assert.deepEqual(got, [
      'blackhole 10.65.0.0/26 proto 81',
      '10.65.0.1 dev calia proto 81 scope link',
      '10.65.0.64/26 via 127.0.0.2 dev eth0 proto 81',
    ]);
  });

  describe('printed as iproute2 prints them (a real kernel in a namespace)', function () {
    this.timeout(30_000);
    let lab: Lab;
    let ns: Netns;
    before(async function () {
      if (process.getuid?.() !== 0) return this.skip();
      lab = new Lab({ tag: 'demort' });
      ns = await lab.namespace('n');
      // A veth pair stands in for the uplink and a pod's host veth (this kernel has no dummy).
      await ns.ip('link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'cali1234567890a');
      await ns.ip('addr', 'add', '10.0.0.1/24', 'dev', 'eth0');
      await ns.ip('link', 'set', 'eth0', 'up');
      await ns.ip('link', 'set', 'cali1234567890a', 'up');
      // proto right after the destination: ip takes nothing after the ECMP next hops.
      for (const { add } of ROUTES) {
        const head = add[0] === 'blackhole' ? 2 : 1;
        await ns.ip('route', 'add', ...add.slice(0, head), 'proto', '81', ...add.slice(head));
      }
    });
    after(() => lab?.destroy());

    it('one line per route, the same words in the same order', async () => {
      // iproute2 puts each ECMP next hop on a line of its own; the view keeps them on one.
      // (Not `show proto 81`: a filter on the protocol leaves it out of what is printed.)
      const text = await ns.ip('route', 'show');
      const kernel = text
        .replace(/\n\s+nexthop/g, ' nexthop')
        .split('\n')
        .map((l) => l.trim().replace(/\s+/g, ' '))
        .filter((l) => l.includes(' proto 81'))
        .sort();
      assert.deepEqual(kernel, ROUTES.map((r) => ipRouteLine(r.route)).sort());
    });
  });
});
