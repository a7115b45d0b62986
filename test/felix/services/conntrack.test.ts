// Stale UDP conntrack entries after an endpoint goes, with real packets: a client pod sends a
// datagram every 50 ms from one fixed source port to a cluster IP (as a DNS resolver does), so
// every datagram rides the conntrack entry the first one made. Remove the endpoint it reached:
// with felix's cleanup the next datagrams reach the other endpoint; without it they keep going
// to the removed one. TCP entries and another service's frontend are left alone.
// The lab part is root only; the planning is checked without it.
import assert from 'node:assert/strict';
import { Ctnetlink, IPPROTO_TCP } from '../../../felix/netlink/ctnetlink.js';
import { ServiceCompiler } from '../../../felix/services/compile.js';
import { type ConntrackFilter, ServiceConntrack, staleConntrackFilters } from '../../../felix/services/conntrack.js';
import { NetlinkConntrackCleaner } from '../../../felix/services/conntrack-netlink.js';
import type { ServiceInput, ServicePort } from '../../../felix/services/input.js';
import { programServices } from '../../../felix/services/program.js';
import { Lab } from '../../support/netns.js';
import type { ManagedProcess } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';
import { type PodSpec, SERVER_PORT, ServiceNode } from './felix-lab.js';
import { prng } from '../../support/prng.js';

const PODS: PodSpec[] = [
  { name: 'a', v4: '10.68.0.2', v6: 'fd00:68::2' },
  { name: 'b', v4: '10.68.0.3', v6: 'fd00:68::3' },
  { name: 'cl', v4: '10.68.0.5', v6: 'fd00:68::5' },
];
const v4 = (name: string) => PODS.find((p) => p.name === name)!.v4;

const DNS = '10.96.8.11';
const OTHER = '10.96.8.12';
const WEB = '10.96.8.13';

function port(over: Partial<ServicePort> & Pick<ServicePort, 'id' | 'clusterIPs'>): ServicePort {
  return { protocol: 'udp', port: 53, externalIPs: [], loadBalancerIPs: [], endpoints: [], ...over };
}
const eps = (names: readonly string[]) => names.map((n) => ({ address: v4(n), port: SERVER_PORT, local: true }));

function input(dns: readonly string[], other: readonly string[], web: readonly string[]): ServiceInput {
  return {
    nodeAddresses: [],
    clusterCidrs: ['10.68.0.0/16'],
    services: [
      port({ id: 'default/dns/dns/udp', clusterIPs: [DNS], endpoints: eps(dns) }),
      port({ id: 'default/other/dns/udp', clusterIPs: [OTHER], endpoints: eps(other) }),
      port({ id: 'default/web/http/tcp', protocol: 'tcp', port: 80, clusterIPs: [WEB], endpoints: eps(web) }),
    ],
  };
}

// Sends a datagram every 50 ms from one source port; prints `<epoch ms> <endpoint>` for each answer.
const UDP_CLIENT = `
const dgram = require('node:dgram');
const [host, port, sport] = process.argv.slice(1);
const s = dgram.createSocket('udp4');
s.on('message', (m) => console.log(Date.now() + ' ' + m.toString().split(' ')[0]));
s.on('error', (e) => console.log('error ' + e.code));
s.bind(Number(sport), () => setInterval(() => s.send('probe', Number(port), host), 50));`;

function answers(p: ManagedProcess): { t: number; name: string }[] {
  return [...p.tail().matchAll(/^(\d+) (\S+)$/gm)].map((m) => ({ t: Number(m[1]), name: m[2]! }));
}

describe('felix services: stale UDP conntrack entries', () => {
  describe('planning (no kernel)', () => {
    const udp = (id: string, endpoints: readonly string[], over: Partial<ServicePort> = {}) =>
      port({ id, clusterIPs: ['10.96.0.10'], endpoints: endpoints.map((address) => ({ address, port: 53, local: false })), ...over });
    const inputOf = (...services: ServicePort[]): ServiceInput => ({ services, nodeAddresses: ['192.168.1.1'], clusterCidrs: [] });

    it('an endpoint gone: its entries to every frontend of the port and to its nodePort, nothing for the one kept', () => {
      const over = { externalIPs: ['203.0.113.7'], nodePort: 30053 };
      const f = staleConntrackFilters(inputOf(udp('s', ['10.1.0.2', '10.1.0.3'], over)), inputOf(udp('s', ['10.1.0.3'], over)));
      assert.deepEqual(f, [
        { family: 4, protocol: 'udp', origDst: '10.96.0.10', origDstPort: 53, replySrc: '10.1.0.2' },
        { family: 4, protocol: 'udp', origDst: '203.0.113.7', origDstPort: 53, replySrc: '10.1.0.2' },
        { family: 4, protocol: 'udp', origDstPort: 30053, replySrc: '10.1.0.2' },
      ]);
    });

    it('no endpoint to some: the entries no DNAT touched; TCP never; an unchanged input nothing', () => {
      const tcp = (endpoints: string[]) => udp('t', endpoints, { protocol: 'tcp', clusterIPs: ['10.96.0.11'] });
      const before = inputOf(udp('s', [], { nodePort: 30053 }), tcp(['10.1.0.2']));
      const after = inputOf(udp('s', ['10.1.0.3'], { nodePort: 30053 }), tcp([]));
      assert.deepEqual(staleConntrackFilters(before, after), [
        { family: 4, protocol: 'udp', origDst: '10.96.0.10', origDstPort: 53, replySrc: '10.96.0.10' },
        { family: 4, protocol: 'udp', origDst: '192.168.1.1', origDstPort: 30053, replySrc: '192.168.1.1' },
      ]);
      assert.deepEqual(staleConntrackFilters(after, after), []);
    });

    it('a UDP port removed altogether takes its endpoints with it (IPv6 too)', () => {
      const before = inputOf(udp('s', ['fd00::2'], { clusterIPs: ['10.96.0.10', 'fd00:96::10'] }));
      assert.deepEqual(staleConntrackFilters(before, inputOf()), [
        { family: 6, protocol: 'udp', origDst: 'fd00:96::10', origDstPort: 53, replySrc: 'fd00::2' },
      ]);
    });

    const sorted = (f: readonly ConntrackFilter[]) => f.map((x) => JSON.stringify(x)).sort();

    it('a ServiceConntrack plans what staleConntrackFilters does for each change, from the ports the compile changed', async () => {
      const cleared: ConntrackFilter[][] = [];
      const ct = new ServiceConntrack({
        clear: async (f) => {
          cleared.push([...f]);
          return f.length;
        },
      });
      const compiler = new ServiceCompiler();
      const random = prng(7);
      const rand = (n: number) => Math.floor(random() * n);
      const make = (i: number) =>
        udp(
          `p${i}`,
          Array.from({ length: rand(3) }, () => `10.1.0.${rand(6)}`),
          {
            protocol: rand(4) ? 'udp' : 'tcp',
            clusterIPs: [`10.96.0.${i}`],
            ...(rand(2) ? { nodePort: 30000 + i } : {}),
          },
        );
      const list = Array.from({ length: 6 }, (_, i) => make(i));
      /** What the conntrack was last told the kernel holds. */
      let kernel: ServiceInput | undefined;
      const fates = { applied: 0, failed: 0, missed: 0, untold: 0, stepped: 0 };
      for (let step = 0; step < 200; step++) {
        // Mostly a port replaced in its place (in the caller's own list), sometimes one added or taken out.
        const what = rand(8);
        if (what === 0 && list.length > 1) list.splice(rand(list.length), 1);
        else if (what === 1) list.push(make(10 + (step % 40)));
        else list[rand(list.length)] = make(rand(6));
        const ids = new Set<string>();
        const now = inputOf(...list.filter((p) => !ids.has(p.id) && ids.add(p.id)));
        compiler.compile(now);
        const change = compiler.lastChange();
        if (change.ports) fates.stepped++;
        const fate = rand(12);
        if (fate === 0) {
          // The apply failed: the kernel kept what it had, and the next apply reads this change too.
          ct.notApplied(change);
          fates.failed++;
          continue;
        }
        if (fate === 1) {
          // Compiled without the conntrack hearing of it: the next change is read whole.
          fates.missed++;
          continue;
        }
        const want = staleConntrackFilters(kernel, now);
        cleared.length = 0;
        await ct.applied(now, fate === 2 ? undefined : change);
        fates[fate === 2 ? 'untold' : 'applied']++;
        assert.deepEqual(sorted(cleared[0] ?? []), sorted(want), `step ${step}: the filters of the change`);
        kernel = { ...now, services: [...now.services] };
      }
      assert.ok(
        Object.values(fates).every((n) => n >= 5),
        `every way of telling the conntrack was taken: ${JSON.stringify(fates)}`,
      );
    });

    it("the compile's change names the ports it changed, with what they were: one endpoint changed is that port alone", () => {
      const compiler = new ServiceCompiler();
      const ports = Array.from({ length: 50 }, (_, i) => udp(`p${i}`, ['10.1.0.2'], { clusterIPs: [`10.96.1.${i}`] }));
      compiler.compile(inputOf(...ports));
      assert.equal(compiler.lastChange().ports, undefined, 'the first compile compiled every port');
      const before = ports[7]!;
      ports[7] = udp('p7', ['10.1.0.3'], { clusterIPs: ['10.96.1.7'] });
      compiler.compile(inputOf(...ports));
      const change = compiler.lastChange();
      assert.deepEqual([...(change.ports ?? new Map()).entries()], [['p7', { before, after: ports[7] }]]);
      compiler.compile(inputOf(...ports));
      assert.equal(compiler.lastChange().ports?.size, 0, 'nothing changed: no port');
      assert.equal(compiler.lastChange().compile, change.compile + 1, 'compiles are numbered');
      const gone = ports.pop()!;
      compiler.compile(inputOf(...ports));
      assert.deepEqual([...(compiler.lastChange().ports ?? new Map()).entries()], [[gone.id, { before: gone, after: undefined }]]);
    });
  });

  describe('real packets (root)', function () {
    this.timeout(120_000);
    const lab = new Lab({ tag: 'svct' });
    let node: ServiceNode;
    const errors: string[] = [];
    let cleaner: NetlinkConntrackCleaner;
    let conntrack: ServiceConntrack;

    async function program(next: ServiceInput, clean: boolean): Promise<void> {
      const report = await programServices(node.programmer, next, node.compiler, clean ? conntrack : undefined).applied;
      assert.ok(report.ok, report.error);
    }

    // Starts a fixed-port UDP client and waits for its first answer; returns the endpoint it reached.
    async function udpClient(host: string, sport: number): Promise<{ p: ManagedProcess; reached: string }> {
      const p = node.ns('cl').spawn(['node', '-e', UDP_CLIENT, host, '53', String(sport)], { name: `udp-${sport}` });
      await waitFor(() => answers(p).length >= 3, { what: `answers to ${host} from port ${sport}`, timeoutMs: 5000, intervalMs: 50 });
      const seen = new Set(answers(p).map((a) => a.name));
      assert.equal(seen.size, 1, `one source port, one entry, one endpoint: ${[...seen]}`);
      return { p, reached: [...seen][0]! };
    }

    before(async () => {
      node = await ServiceNode.create(lab, PODS);
      cleaner = new NetlinkConntrackCleaner({ netns: node.node.name, onError: (e) => errors.push(e) });
      conntrack = new ServiceConntrack(cleaner);
    });
    after(async () => {
      node?.programmer.stop();
      await lab.destroy();
    });

    it('an endpoint removed: the client on its fixed source port reaches the other within a second; TCP and another frontend untouched', async () => {
      await program(input(['a', 'b'], ['a', 'b'], ['a', 'b']), true);
      const dns = await udpClient(DNS, 5301);
      const gone = dns.reached;
      const kept = gone === 'a' ? 'b' : 'a';
      // The other UDP frontend and the TCP service reach only the endpoint about to leave the DNS service.
      await program(input(['a', 'b'], [gone], [gone]), true);
      const other = await udpClient(OTHER, 5302);
      assert.equal(other.reached, gone);
      const long = await node.longConnection('cl', WEB, 80);
      assert.equal(long.endpoint, gone);

      // One change: the DNS service loses `gone`, the TCP service too (it keeps `kept` for new connections).
      await program(input([kept], [gone], [kept]), true);
      const t0 = Date.now();
      await waitFor(() => answers(dns.p).some((a) => a.t >= t0 && a.name === kept), {
        what: `the DNS client's datagrams reaching ${kept}`,
        timeoutMs: 1000,
        intervalMs: 20,
      });
      await new Promise((r) => setTimeout(r, 300));
      const later = answers(dns.p).filter((a) => a.t >= t0 + 100);
      assert.ok(later.length > 0 && later.every((a) => a.name === kept), JSON.stringify(later));
      assert.ok(cleaner.deleted >= 1, `deleted ${cleaner.deleted}`);
      // Another service's frontend kept its entry to `gone`; the TCP connection to `gone` still flows.
      assert.ok(
        answers(other.p)
          .filter((a) => a.t >= t0 + 100)
          .every((a) => a.name === gone),
        `the other frontend answered other than ${gone}: ${JSON.stringify(
          answers(other.p)
            .filter((a) => a.t >= t0 + 100 && a.name !== gone)
            .slice(0, 5),
        )}`,
      );
      assert.ok(
        answers(other.p).some((a) => a.t >= t0 + 100),
        'the other frontend got no answer after the change',
      );
      await long.flows(5);
      const ct = Ctnetlink.open({ netns: `/var/run/netns/${node.node.name}` });
      try {
        const tcp = await ct.list({ family: 4, protocol: IPPROTO_TCP, orig: { dst: WEB, dstPort: 80 }, reply: { src: v4(gone) } });
        assert.equal(tcp.length, 1, 'the TCP connection to the removed endpoint keeps its entry');
      } finally {
        ct.close();
      }
      assert.deepEqual(errors, []);
      await Promise.all([dns.p.stop(1000), other.p.stop(1000), long.stop()]);
    });

    it('without the cleanup (the stale behaviour this closes): the client keeps reaching the removed endpoint', async () => {
      await program(input(['a', 'b'], ['a', 'b'], ['a', 'b']), false);
      const dns = await udpClient(DNS, 5303);
      const kept = dns.reached === 'a' ? 'b' : 'a';
      await program(input([kept], ['a', 'b'], ['a', 'b']), false);
      const t0 = Date.now();
      await new Promise((r) => setTimeout(r, 1500));
      const later = answers(dns.p).filter((a) => a.t >= t0);
      assert.ok(later.length >= 10, JSON.stringify(later));
      assert.ok(
        later.every((a) => a.name === dns.reached),
        `expected only ${dns.reached}: ${JSON.stringify(later)}`,
      );
      await dns.p.stop(1000);
    });
  });
});
