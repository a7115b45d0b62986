// The incremental desired table against the reference: after any sequence of deltas, its
// routes are exactly computeDesiredState of the input it stands for; and felix, fed deltas,
// leaves the dataplane holding exactly those routes while writing only what changed.
import assert from 'node:assert/strict';
import { DesiredTable, type RemoteRouteChange } from '../../felix/desired-table.js';
import {
  computeDesiredState,
  describeRoute,
  Felix,
  FelixInputError,
  MemoryDataplane,
  PODROUTE_PROTOCOL,
  type FelixInput,
  type LocalWorkload,
  type Route,
} from '../../felix/index.js';
import { prng } from '../support/prng.js';

const text = (routes: Iterable<Route>) => [...routes].map(describeRoute).sort();

/** A random step: mostly learned-route changes, sometimes pods, blocks, the node, pools or VTEPs. */
function generator(seed: number) {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const int = (n: number) => Math.floor(rnd() * n);
  // Blocks of 10.64.0.0/10 (/26), a few borrowed /32s, and next hops in and out of the subnet.
  const block = () => `10.${64 + int(2)}.${int(4)}.${pick([0, 64, 128, 192])}/26`;
  const host = () => `10.${64 + int(2)}.${int(4)}.${int(8)}`;
  const hop = () =>
    pick<string | { address: string; peer: string }>([
      '10.0.1.6',
      '10.0.1.7',
      '10.0.2.8',
      '10.0.1.5',
      '10.0.3.9',
      '10.90.255.1',
      { address: '10.0.2.8', peer: '10.0.1.7' },
    ]);
  // The node's table: a link route to a ToR's loopback, sometimes a static route and a default.
  const kernelRoutes = () => [
    { dst: '10.90.255.1/32', type: 'unicast' as const, nextHops: [{ dev: 'eth0' }] },
    ...(rnd() < 0.5 ? [{ dst: '10.0.2.0/24', type: 'unicast' as const, nextHops: [{ dev: 'eth1', gateway: '10.0.9.1' }] }] : []),
    ...(rnd() < 0.5 ? [{ dst: '0.0.0.0/0', type: 'unicast' as const, nextHops: [{ dev: 'eth0', gateway: '10.0.1.1' }] }] : []),
  ];
  const workloads = (): LocalWorkload[] =>
    Array.from({ length: int(4) }, (_, i) => ({ iface: `cali${i}`, addresses: Array.from({ length: 1 + int(2) }, host) }));
  const pools = () =>
    pick([
      [],
      [{ cidr: '10.64.0.0/10', ipipMode: pick(['Never', 'Always', 'CrossSubnet'] as const) }],
      [{ cidr: '10.64.0.0/10', vxlanMode: pick(['Always', 'CrossSubnet'] as const) }],
    ]);
  const vteps = () =>
    ['10.0.1.6', '10.0.2.8', '10.0.1.5']
      .filter(() => rnd() < 0.7)
      .map((nodeIp, i) => ({ nodeIp, vtepIp: `10.70.0.${i + 1}`, vtepMac: `66:00:00:00:00:0${i + 1}` }));
  return {
    step(): { changes?: RemoteRouteChange[]; partial?: Partial<FelixInput> } {
      const r = rnd();
      if (r < 0.6)
        return {
          changes: Array.from({ length: 1 + int(5) }, () => ({
            prefix: rnd() < 0.8 ? block() : `${host()}/32`,
            nextHops: rnd() < 0.25 ? [] : Array.from({ length: 1 + int(2) }, hop),
          })),
        };
      if (r < 0.72) return { partial: { workloads: workloads() } };
      if (r < 0.8) return { partial: { ownBlocks: Array.from({ length: int(3) }, block) } };
      if (r < 0.86) return { partial: { pools: pools() } };
      if (r < 0.9) return { partial: { remoteVteps: vteps() } };
      if (r < 0.92)
        return {
          partial:
            rnd() < 0.5
              ? { kernelRoutes: kernelRoutes() }
              : { staticRoutes: rnd() < 0.5 ? [] : [{ prefix: `${host()}/32`, via: pick(['10.0.1.6', '10.0.2.8', '10.90.255.1']) }] },
        };
      if (r < 0.96)
        return {
          partial: { node: { addressV4: pick(['10.0.1.5/24', '10.0.0.5/16']), uplink: 'eth0', vxlanTunnelAddressV4: '10.70.0.9' } },
        };
      return { partial: { remoteRoutes: Array.from({ length: int(6) }, () => ({ prefix: block(), nextHops: [hop()] })) } };
    },
  };
}

describe('felix desired table (incremental, held to computeDesiredState)', () => {
  it('after every delta of 200 seeded sequences, its routes are the reference routes of its input', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const g = generator(seed);
      const table = new DesiredTable();
      const given: Partial<FelixInput> = {};
      for (let i = 0; i < 40; i++) {
        const s = g.step();
        if (s.changes) table.changeRemoteRoutes(s.changes);
        else {
          table.update(s.partial!);
          Object.assign(given, s.partial);
        }
        // The node's table and static routes are the table's input as given, not dropped on the way.
        assert.equal(table.input.kernelRoutes, given.kernelRoutes, `seed ${seed} step ${i}: kernelRoutes`);
        assert.equal(table.input.staticRoutes, given.staticRoutes, `seed ${seed} step ${i}: staticRoutes`);
        const reference = computeDesiredState(table.input);
        assert.deepEqual(text(table.routes.values()), text(reference.routes), `seed ${seed} step ${i}`);
        assert.deepEqual(table.state.neighbors, reference.neighbors, `seed ${seed} step ${i}`);
        // The table's input is keyed by prefix, so a list's duplicates (reported once) are not in it.
        const problems = table.problems().filter((p) => !p.includes('given twice'));
        assert.deepEqual(problems.sort(), [...reference.problems].sort(), `seed ${seed} step ${i}`);
        assert.deepEqual(table.state.unresolved, reference.unresolved, `seed ${seed} step ${i}: unresolved`);
      }
    }
  });

  it('marks only the destinations a learned-route change touched', () => {
    const table = new DesiredTable({
      node: { addressV4: '10.0.1.5/24', uplink: 'eth0' },
      workloads: [{ iface: 'cali1', addresses: ['10.65.0.2'] }],
      ownBlocks: ['10.65.0.0/26'],
      remoteRoutes: Array.from({ length: 1000 }, (_, i) => ({ prefix: `10.${66 + (i >> 8)}.${i & 255}.0/26`, nextHops: ['10.0.1.6'] })),
      pools: [],
      remoteVteps: [],
    });
    assert.equal(table.takeChanged().all, true);
    table.changeRemoteRoutes([
      { prefix: '10.66.3.0/26', nextHops: ['10.0.1.7'] }, // changed
      { prefix: '10.66.4.0/26', nextHops: ['10.0.1.6'] }, // the same
      { prefix: '10.66.5.0/26', nextHops: [] }, // withdrawn
      { prefix: '10.65.0.2/32', nextHops: ['10.0.1.6'] }, // shadowed by a local pod
    ]);
    const { all, dsts } = table.takeChanged();
    assert.equal(all, false);
    assert.deepEqual([...dsts].sort(), ['10.66.3.0/26', '10.66.5.0/26']);
  });

  it('a batch with one bad change is refused whole, naming the field, and nothing changes', () => {
    const table = new DesiredTable({ ...computeInput(), remoteRoutes: [{ prefix: '10.66.0.0/26', nextHops: ['10.0.1.6'] }] });
    table.takeChanged();
    assert.throws(
      () =>
        table.changeRemoteRoutes([
          { prefix: '10.66.1.0/26', nextHops: ['10.0.1.6'] },
          { prefix: '10.66.2.0/26', nextHops: ['fd00::1'] },
        ]),
      (e: unknown) => e instanceof FelixInputError && e.field === 'remoteRoutes[1].nextHops[0]',
    );
    assert.deepEqual([...table.routes.keys()], ['10.66.0.0/26']);
    assert.equal(table.takeChanged().dsts.size, 0);
  });
});

function computeInput(): FelixInput {
  return { node: { addressV4: '10.0.1.5/24', uplink: 'eth0' }, workloads: [], ownBlocks: [], remoteRoutes: [], pools: [], remoteVteps: [] };
}

describe('felix fed deltas (in-memory dataplane)', () => {
  it('holds exactly the reference routes after each burst, writing only what changed', async () => {
    const g = generator(7);
    const dp = new MemoryDataplane({ links: ['eth0', 'cali0', 'cali1', 'cali2', 'cali3'] });
    const felix = new Felix(dp, { resyncIntervalMs: 0, sysctls: false });
    felix.update(computeInput());
    await felix.start();
    let incrementalWrites = 0,
      changesGiven = 0;
    felix.on('report', (r) => {
      if (r.kind === 'incremental') incrementalWrites += r.routesCreated + r.routesReplaced + r.routesDeleted;
    });
    try {
      for (let burst = 0; burst < 30; burst++) {
        for (let i = 0; i < 5; i++) {
          const s = g.step();
          if (s.changes && !s.partial) {
            felix.changeRemoteRoutes(s.changes);
            changesGiven += s.changes.length;
          } else if (s.partial?.workloads || s.partial?.ownBlocks) felix.update(s.partial);
        }
        await felix.settled();
        const installed = [...dp.routes.values()].filter((r) => r.protocol === PODROUTE_PROTOCOL);
        assert.deepEqual(text(installed), text(computeDesiredState(felix.input).routes), `burst ${burst}`);
      }
    } finally {
      felix.stop();
    }
    assert.ok(incrementalWrites > 0, 'deltas were written incrementally');
    assert.ok(incrementalWrites <= changesGiven + 200, `${incrementalWrites} writes for ${changesGiven} changes`);
  });
});
