// What needs kernel modules this machine lacks (ipip, sctp), with real packets under a real
// kernel: three `podroute node run` agents (compiled dist/) in the kernel VM, in two subnets
// joined by a router that knows no pod route, pods made through podroute-cni. One VM run
// (scenario.ts, bundled to JavaScript) gathers routes, tunl0, MTUs, pings, underlay captures and
// SCTP associations; this suite, outside the VM, asserts them. IPIP end to end, and the SCTP
// cases of the policy and services suites (whose kernels here have no SCTP). Without the VM the
// suite fails, not skips; PODROUTE_KERNEL_VM=0 skips it on purpose.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KernelVmTimeoutError, kernelVmMissing, runInKernelVm } from '../../support/kernel-vm.js';
import { readPcap } from '../../support/pcap.js';
import { buildForVm } from '../../support/vm-build.js';
import type { IpipScenarioResult } from './result.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const POD_CIDR = /^10\.244\./;
const NODE = { n1: '10.50.1.11', n2: '10.50.1.12', n3: '10.50.2.13' };

/** The IPv4 packets of a capture: protocol, addresses, and the ICMP type, code and next-hop MTU. */
interface Ip4 {
  proto: number;
  src: string;
  dst: string;
  icmp?: { type: number; code: number; mtu: number };
}

function ipv4Packets(file: string): Ip4[] {
  const out: Ip4[] = [];
  for (const p of readPcap(file)) {
    if (p.linkType !== 1 || p.data.length < 34 || p.data.readUInt16BE(12) !== 0x0800) continue;
    const ip = p.data.subarray(14);
    const ihl = (ip[0]! & 0x0f) * 4;
    const addr = (o: number) => [...ip.subarray(o, o + 4)].join('.');
    const pkt: Ip4 = { proto: ip[9]!, src: addr(12), dst: addr(16) };
    if (pkt.proto === 1) pkt.icmp = { type: ip[ihl]!, code: ip[ihl + 1]!, mtu: ip.readUInt16BE(ihl + 6) };
    out.push(pkt);
  }
  return out;
}

describe('real kernel (VM): IPIP between three agents (tunl0, CrossSubnet, MTU, mode switch), SCTP policy and Service', function () {
  this.timeout(2_000_000);
  const out = mkdtempSync(join(tmpdir(), 'ipip-e2e-'));
  let r: Partial<IpipScenarioResult> = {};
  /** Why the VM run did not end well, if it did not: each step's test then says it. */
  let failed: string | undefined;
  let vmMs = 0;

  /** The part of the result a test reads, or a failure quoting why the run did not get that far. */
  function part<K extends keyof IpipScenarioResult>(k: K): IpipScenarioResult[K] {
    const v = r[k];
    if (v === undefined) assert.fail(`the scenario never measured ${k}: ${(k === 'sctp' && r.sctpError) || failed || 'no reason given'}`);
    return v;
  }

  before(async function () {
    const missing = kernelVmMissing();
    if (missing !== undefined) {
      if (process.env.PODROUTE_KERNEL_VM === '0') this.skip();
      assert.fail(missing);
    }
    const bundle = await buildForVm(join(HERE, 'scenario.ts'), 'real-kernel-scenario.mjs');
    const t = Date.now();
    try {
      const run = await runInKernelVm(['node', bundle, join(HERE, 'lab'), out], {
        // A bound, not an estimate: a few minutes on an idle machine, several times that on a busy one.
        timeoutMs: 1_800_000,
        outDir: out,
        env: { PODROUTE_RUN: 'dist' },
      });
      if (run.code !== 0) failed = `the scenario exited ${run.code} in the VM:\n${run.stderr.slice(-6000)}`;
    } catch (e) {
      failed = e instanceof KernelVmTimeoutError ? `${e.message}\n${e.stderr.slice(-4000)}` : String(e);
    }
    vmMs = Date.now() - t;
    if (existsSync(join(out, 'result.json'))) r = JSON.parse(readFileSync(join(out, 'result.json'), 'utf8')) as Partial<IpipScenarioResult>;
    process.stderr.write(`      (kernel VM run: ${(vmMs / 1000).toFixed(0)} s; steps done at ${JSON.stringify(r.timings ?? {})} ms)\n`);
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  it("every node's tunl0 is up, with ipipMTU from FelixConfiguration and the address IPAM gave its Node, from its own block", () => {
    for (const [n, node] of Object.entries(part('nodes'))) {
      assert.equal(node.tunl0.up, true, `${n} tunl0 up`);
      assert.equal(node.tunl0.mtu, 1420, `${n} tunl0 MTU`);
      assert.deepEqual(node.tunl0.addresses, [`${node.tunnelAddressAnnotation}/32`], `${n} tunl0 address`);
      const block = part('blocks')[n]!;
      assert.ok(
        block.startsWith(node.tunnelAddressAnnotation.split('.').slice(0, 3).join('.')),
        `${n}: ${node.tunnelAddressAnnotation} in ${block}`,
      );
    }
  });

  it('CrossSubnet: a block in the same subnet is routed straight over eth1, one across the router via the node over tunl0 onlink', () => {
    // The routes were listed as felix's (`ip route show proto 81`), which leaves proto out of each line.
    const route = (n: string, to: string) => part('nodes')[n]!.routes.find((l) => l.startsWith(`${part('blocks')[to]} `)) ?? '(none)';
    assert.match(route('n1', 'n2'), new RegExp(`via ${NODE.n2} dev eth1`), 'n1 to n2');
    assert.match(route('n2', 'n1'), new RegExp(`via ${NODE.n1} dev eth1`), 'n2 to n1');
    for (const [from, to] of [
      ['n1', 'n3'],
      ['n2', 'n3'],
      ['n3', 'n1'],
      ['n3', 'n2'],
    ] as const)
      assert.match(route(from, to), new RegExp(`via ${NODE[to]} dev tunl0 .*onlink`), `${from} to ${to}`);
  });

  it("the pods' MTU is tunl0's, on both ends of their veth (the netconf names none)", () => {
    for (const [p, pod] of Object.entries(part('pods'))) {
      assert.equal(pod.mtu, 1420, `pod ${p} eth0`);
      assert.equal(pod.hostIfMtu, 1420, `pod ${p} host end ${pod.hostIf}`);
    }
  });

  it('pod to pod across subnets: on the underlay only IP-in-IP between the nodes, no bare pod address', () => {
    assert.equal(part('pings').crossSubnet.code, 0, part('pings').crossSubnet.output);
    const pkts = ipv4Packets(join(out, 'cross-subnet.pcap'));
    const ipip = pkts.filter((p) => p.proto === 4);
    assert.ok(ipip.length >= 10, `5 requests and 5 replies in IP-in-IP, saw ${ipip.length} of ${pkts.length} packets`);
    for (const p of ipip) assert.deepEqual([p.src, p.dst].sort(), [NODE.n1, NODE.n3].sort(), `outer addresses ${p.src} > ${p.dst}`);
    const bare = pkts.filter((p) => POD_CIDR.test(p.src) || POD_CIDR.test(p.dst));
    assert.deepEqual(bare, [], 'no packet on the underlay carries a pod address outside the tunnel');
  });

  it('pod to pod within a subnet (CrossSubnet): straight, the pod addresses on the wire and no IP-in-IP', () => {
    assert.equal(part('pings').sameSubnet.code, 0, part('pings').sameSubnet.output);
    const pkts = ipv4Packets(join(out, 'same-subnet.pcap'));
    assert.equal(pkts.filter((p) => p.proto === 4).length, 0, 'no IP-in-IP');
    const icmp = pkts.filter(
      (p) => p.proto === 1 && [p.src, p.dst].sort().join() === [part('pods').a!.ip, part('pods').b!.ip].sort().join(),
    );
    assert.ok(icmp.length >= 10, `the pings between ${part('pods').a!.ip} and ${part('pods').b!.ip} seen as they are: ${icmp.length}`);
  });

  it('MTU: a 1,400-byte ping with DF set crosses tunl0; a bigger one is refused in the pod, and forwarded gets fragmentation needed, mtu 1420', () => {
    assert.equal(part('mtu').df1400.code, 0, part('mtu').df1400.output);
    assert.match(part('mtu').df1400.output, /3 received, 0% packet loss/);
    assert.match(part('mtu').df1400.output, /1380 bytes from/, 'replies of 1,372 bytes of data (+8 ICMP, +20 IP = 1,400)');
    assert.notEqual(part('mtu').tooBigInPod.code, 0, part('mtu').tooBigInPod.output);
    assert.match(part('mtu').tooBigInPod.output, /message too long, mtu=1420/);
    assert.notEqual(part('mtu').tooBigForwarded.code, 0, part('mtu').tooBigForwarded.output);
    assert.match(part('mtu').tooBigForwarded.output, /Frag needed and DF set \(mtu = 1420\)/);
    const icmp = ipv4Packets(join(out, 'frag-needed.pcap')).filter((p) => p.icmp?.type === 3);
    assert.ok(icmp.length >= 1, 'an ICMP destination unreachable reached the pod');
    assert.deepEqual({ ...icmp[0]!.icmp, dst: icmp[0]!.dst }, { type: 3, code: 4, mtu: 1420, dst: part('pods').a!.ip });
  });

  it("switching the pool's mode re-programs the route in place: no ping lost, no route deleted", () => {
    assert.deepEqual(
      part('switches').map((s) => s.mode),
      ['Always', 'CrossSubnet'],
    );
    const [always, back] = part('switches') as [IpipScenarioResult['switches'][0], IpipScenarioResult['switches'][0]];
    assert.match(always.route, new RegExp(`via ${NODE.n2} dev tunl0 .*onlink`));
    assert.match(back.route, new RegExp(`via ${NODE.n2} dev eth1`));
    for (const s of part('switches')) {
      const stats = /(\d+) packets transmitted, (\d+) received/.exec(s.ping);
      assert.ok(stats, `ping summary across the switch to ${s.mode}: ${s.ping.slice(-300)}`);
      assert.ok(Number(stats[1]) >= 30, `the ping ran across the switch: ${stats[0]}`);
      assert.equal(stats[1], stats[2], `no ping lost across the switch to ${s.mode} (${s.reprogrammedMs} ms): ${stats[0]}`);
      const block = part('blocks').n2!;
      assert.deepEqual(
        s.routeEvents.filter((e) => e.startsWith('Deleted') && e.includes(block)),
        [],
        `n1 never deleted its route to ${block}: ${s.routeEvents.join('\n')}`,
      );
      assert.ok(
        s.routeEvents.some((e) => e.startsWith(`${block} `)),
        `n1's route to ${block} was replaced: ${s.routeEvents.join('\n')}`,
      );
    }
    assert.equal(part('pings').sameSubnetAlways?.code, 0, part('pings').sameSubnetAlways?.output);
    const pkts = ipv4Packets(join(out, 'same-subnet-always.pcap'));
    assert.ok(pkts.filter((p) => p.proto === 4).length >= 10, 'with Always, n1-n2 pod traffic is IP-in-IP too');
    assert.deepEqual(
      pkts.filter((p) => POD_CIDR.test(p.src) || POD_CIDR.test(p.dst)),
      [],
      'and no pod address is bare on the wire',
    );
  });

  it('the scenario ran to its end in the VM', () => {
    assert.equal(failed, undefined, failed);
  });

  describe('SCTP (the policy and services suites, whose kernel here has none)', () => {
    it('with no policy, pod a opens SCTP associations to pod b on 80 and 81', () => {
      assert.deepEqual([part('sctp').open80.reply, part('sctp').open81.reply], ['b-80', 'b-81'], JSON.stringify(part('sctp')));
    });

    it('a NetworkPolicy admitting SCTP 80 only: 80 still answers, 81 gets no association', () => {
      assert.equal(part('sctp').allowed80.reply, 'b-80', JSON.stringify(part('sctp').allowed80));
      assert.notEqual(part('sctp').denied81.code, 0, JSON.stringify(part('sctp').denied81));
      assert.equal(part('sctp').denied81.reply, '', 'nothing came back on 81');
    });

    it("a Service's SCTP port: the cluster IP's 8080 reaches pod b's 80 (DNAT), which the policy admits", () => {
      assert.equal(part('sctp').service.code, 0, JSON.stringify(part('sctp').service));
      assert.equal(part('sctp').service.reply, 'b-80');
    });
  });
});
