// tor-dualstack.clab.yml: tor.clab.yml with an IPv6 subnet on every link, an IPv6 address on
// every node and an IPv6 pool. Each node peers with its rack's FRR router once per family; the
// routers learn both families' blocks from every node and pass them to each other; pods get an
// address of each family and reach each other across racks over both, unencapsulated.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { vtysh } from '../../../lib/lab/runner.js';
import { readState } from '../../../lib/lab/state.js';
import { formatLabStatus, labStatus } from '../../../lib/lab/status.js';
import { execCommand, run } from '../../../lib/lab/system.js';
import { waitFor } from '../../support/wait.js';
import { LabUnderTest, ROOT } from './harness.js';

const NODES = ['n1', 'n2', 'n3', 'n4'];
const RACK: Record<string, 1 | 2> = { n1: 1, n2: 1, n3: 2, n4: 2 };
const HOST: Record<string, number> = { n1: 11, n2: 12, n3: 13, n4: 14 };
const v4Of = (n: string) => `10.30.${RACK[n]}.${HOST[n]}`;
const v6Of = (n: string) => `fd00:30:${RACK[n]}::${HOST[n]}`;

interface FrrPath {
  bestpath?: boolean | { overall?: boolean };
  nexthops?: { ip: string; scope?: string }[];
}

describe('lab tor-dualstack.clab.yml: two racks behind FRR, IPv4 and IPv6', function () {
  this.timeout(200_000);
  const lab = new LabUnderTest('tor-dualstack.clab.yml');
  let down = false;

  /** prefix -> the best path's global next hop, in an FRR node's RIB of one family. */
  async function rib(tor: string, family: 4 | 6): Promise<Record<string, string>> {
    const r = JSON.parse(await vtysh(lab.state, tor, family === 4 ? 'show ip bgp json' : 'show bgp ipv6 unicast json')) as {
      routes?: Record<string, FrrPath[]>;
    };
    const out: Record<string, string> = {};
    for (const [prefix, paths] of Object.entries(r.routes ?? {})) {
      const best = paths.find((p) => p.bestpath === true || (typeof p.bestpath === 'object' && p.bestpath.overall)) ?? paths[0]!;
      out[prefix] = (best.nexthops ?? []).find((h) => h.scope === undefined || h.scope === 'global')?.ip ?? '';
    }
    return out;
  }

  /** Each (from, to, address) that one ping does not cross, over the given family. */
  async function pingFailures(family: 4 | 6): Promise<string[]> {
    const failed: string[] = [];
    await Promise.all(
      lab.state.pods.map(async (from) => {
        for (const to of lab.state.pods) {
          if (to === from) continue;
          const addr = family === 4 ? to.ip! : to.ip6!;
          const r = await execCommand(['ip', 'netns', 'exec', from.namespace, 'ping', `-${family}`, '-c', '1', '-W', '1', addr]);
          if (r.code !== 0) failed.push(`${from.name}(${from.node}) -> ${to.name}(${to.node}) ${addr}`);
        }
      }),
    );
    return failed.sort();
  }

  before(async () => {
    await lab.up();
  });
  after(async () => {
    if (!down) await lab.downAndCheck();
  });

  it('each node has an IPv4 and an IPv6 session with its rack router; the routers peer over both families', async () => {
    await lab.waitSessions(NODES, 2, 40_000);
    await lab.waitSessions(['tor1', 'tor2'], 6, 40_000);
    const n3 = await lab.sessions('n3');
    assert.deepEqual(n3.map((s) => `${s.peer} AS${s.asn} ${s.families.join('+')}`).sort(), [
      '10.30.2.1 AS65002 ipv4-unicast',
      'fd00:30:2::1 AS65002 ipv6-unicast',
    ]);
    const tor1 = await lab.sessions('tor1');
    assert.deepEqual(tor1.map((s) => `${s.peer} ${s.families.join('+')}`).sort(), [
      '10.30.0.2 ipv4-unicast',
      '10.30.1.11 ipv4-unicast',
      '10.30.1.12 ipv4-unicast',
      'fd00:30:1::11 ipv6-unicast',
      'fd00:30:1::12 ipv6-unicast',
      'fd00:30::2 ipv6-unicast',
    ]);
  });

  it("pods get both families; both FRR RIBs hold every node's IPv4 and IPv6 block with the right next hops", async () => {
    for (const n of NODES) {
      const pod = await lab.pod(n, `${n}-a`);
      assert.match(pod.ip ?? '', /^10\.246\./, `${pod.name} IPv4`);
      assert.match(pod.ip6 ?? '', /^fd00:246::/, `${pod.name} IPv6`);
    }
    const blocks = await lab.blocks(NODES);
    const v4 = (n: string) => blocks[n]!.filter((b) => !b.includes(':'));
    const v6 = (n: string) => blocks[n]!.filter((b) => b.includes(':'));
    for (const n of NODES) {
      assert.equal(v4(n).length, 1, `${n}: ${blocks[n]}`);
      assert.equal(v6(n).length, 1, `${n}: ${blocks[n]}`);
      assert.match(v6(n)[0]!, /\/122$/);
    }
    for (const [tor, rack, other] of [
      ['tor1', 1, '2'],
      ['tor2', 2, '1'],
    ] as const) {
      // A block of this rack: next hop the node itself; of the other rack: the other router.
      const want = (family: 4 | 6) =>
        Object.fromEntries(
          NODES.map((n) => [
            (family === 4 ? v4(n) : v6(n))[0]!,
            RACK[n] === rack ? (family === 4 ? v4Of(n) : v6Of(n)) : family === 4 ? `10.30.0.${other}` : `fd00:30::${other}`,
          ]),
        );
      for (const family of [4, 6] as const) {
        const expected = want(family);
        const got = await waitFor(() => rib(tor, family), {
          what: `${tor} IPv${family} RIB = the four blocks`,
          until: (r) => JSON.stringify(Object.keys(r).sort()) === JSON.stringify(Object.keys(expected).sort()),
          timeoutMs: 30_000,
        });
        assert.deepEqual(got, expected, `${tor} IPv${family} next hops`);
      }
    }
  });

  it('pods on every node ping each other over IPv4 and over IPv6, across racks without a tunnel', async () => {
    for (const family of [4, 6] as const) {
      await waitFor(() => pingFailures(family), {
        what: `every pod pings every other pod over IPv${family}`,
        until: (f) => f.length === 0,
        timeoutMs: 30_000,
        intervalMs: 500,
      });
    }
    const [b3] = (await lab.blocks(['n3'])).n3!.filter((b) => b.includes(':'));
    const n1 = (await run(['ip', '-n', lab.ns('n1'), '-6', 'route', 'show', 'proto', '81'])).split('\n').map((l) => l.trim());
    assert.ok(
      n1.some((r) => r.startsWith(`${b3} via `) && r.includes(' dev eth1 ')),
      `n1 reaches n3's IPv6 block through eth1:\n${n1.join('\n')}`,
    );
    assert.ok(!n1.some((r) => /vxlan|tunl/.test(r)), n1.join('\n'));
  });

  it('lab pod add names both addresses; lab status shows the sessions and pods of both families', async () => {
    const add = await execCommand(
      [process.execPath, join(ROOT, 'bin/podroute.js'), 'lab', 'pod', 'add', 'n4', 'n4-b', '--state-dir', lab.stateRoot],
      { timeoutMs: 90_000 },
    );
    assert.match(add.stdout, /^pod n4-b on n4: 10\.246\.\S+, fd00:246::\S+ \(network namespace /, add.stdout + add.stderr);
    lab.state = readState(lab.stateRoot, lab.topo.name)!;
    const text = formatLabStatus(await labStatus(lab.state));
    const row = (node: string) => text.split('\n').find((l) => l.startsWith(`${node} `)) ?? '';
    // Four: the router sends every block back, the node's own too (as-override hides the loop).
    assert.match(row('n1'), /10\.30\.1\.1 up 4 pfx/, text);
    assert.match(row('n1'), /fd00:30:1::1 up 4 pfx/, text);
    assert.match(row('tor2'), /fd00:30:2::13 up 1 pfx/, text);
    assert.match(text, /^POD {2}NODE {2}IP {2}IPV6 {2}NETNS$/m, text);
    const pod = lab.state.pods.find((p) => p.node === 'n2')!;
    assert.ok(text.includes(`${pod.name}  n2  ${pod.ip}  ${pod.ip6}`), text);
  });

  it('lab down leaves no namespace, process or host interface behind', async () => {
    down = true;
    await lab.downAndCheck();
  });
});
