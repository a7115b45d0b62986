// WireGuard on a real kernel: vm-scenario.ts runs in the kernel VM (felix compiled, four nodes,
// a pod on each, three of them encrypting) and captures two nodes' underlays; here its results
// and captures are judged. Every pod packet between encrypting nodes must cross the underlay as
// UDP to a WireGuard port with no pod address in it; a node without WireGuard is reached in clear.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cidrContains, parseAddress, parseCidr, formatAddress } from '../../../ip/index.js';
import { kernelVmAvailable, runInKernelVm } from '../../support/kernel-vm.js';
import { readPcap } from '../../support/pcap.js';
import { buildDist } from '../../support/vm-build.js';
import { ROOT } from '../../support/node-agents.js';

interface Results {
  v4: boolean;
  v6: boolean;
  handshake: boolean;
  rule: string;
  table: string;
  joinProgrammedMs: number;
  joinReachedMs: number;
  joinReachedV6Ms: number;
  rotateReachedMs: number;
  rotateReachedV6Ms: number;
  rotateTotalMs: number;
  n1PeersAfterRotate: string[];
  n2KeysNow: string[];
  clearTo: number;
  clearFrom: number;
  clearV6: number;
  n4HasDevice: boolean;
  peerChangeMs: { netlink: number; wgTool: number };
  finalV4: boolean;
  resyncFailures: unknown[];
  resyncProblems: string[];
  error?: string;
}

interface Packet {
  src: string;
  dst: string;
  /** IP protocol (IPv6: the first next header). */
  proto: number;
  dport?: number;
}

/** The IP packets of an Ethernet capture, their addresses, protocol and UDP destination port. */
function ipPackets(file: string): Packet[] {
  const out: Packet[] = [];
  for (const p of readPcap(file)) {
    const d = p.data;
    if (d.length < 14) continue;
    const type = d.readUInt16BE(12);
    if (type === 0x0800 && d.length >= 34) {
      const ihl = (d[14]! & 0x0f) * 4;
      const proto = d[23]!;
      out.push({
        src: formatAddress(d.subarray(26, 30)),
        dst: formatAddress(d.subarray(30, 34)),
        proto,
        ...(proto === 17 ? { dport: d.readUInt16BE(14 + ihl + 2) } : {}),
      });
    } else if (type === 0x86dd && d.length >= 54) {
      const proto = d[20]!;
      out.push({
        src: formatAddress(d.subarray(22, 38)),
        dst: formatAddress(d.subarray(38, 54)),
        proto,
        ...(proto === 17 && d.length >= 58 ? { dport: d.readUInt16BE(56) } : {}),
      });
    }
  }
  return out;
}

const inAny = (cidrs: readonly string[], a: string) =>
  cidrs.map((c) => parseCidr(c)).some((c) => c.family === parseAddress(a).family && cidrContains(c, parseAddress(a)));
const isPod = (a: string) => inAny(['10.65.0.0/16', 'fd65::/48'], a);
/** Node 4 encrypts nothing: its pods' packets are in clear on every underlay, as they should be. */
const isClearNodePod = (a: string) => inAny(['10.65.4.0/26', 'fd65:0:0:4::/122'], a);

describe('WireGuard between nodes on a real kernel (VM)', function () {
  this.timeout(40 * 60_000);
  let out = '';
  let r: Results;

  before(async function () {
    if (!(await kernelVmAvailable())) this.skip();
    out = mkdtempSync(join(tmpdir(), 'wg-vm-'));
    // Compiled JavaScript runs in the VM: felix from dist/, the scenario as one plain module.
    // dist/ is built once per test run, shared with the other kernel VM suites.
    await buildDist();
    const scenario = join(out, 'scenario.mjs');
    execFileSync(
      'npx',
      [
        'esbuild',
        join(ROOT, 'test/e2e/wireguard/vm-scenario.ts'),
        '--format=esm',
        '--platform=node',
        '--target=node20',
        `--outfile=${scenario}`,
        '--log-level=warning',
      ],
      { cwd: ROOT, stdio: ['ignore', 'ignore', 2] },
    );
    const run = await runInKernelVm(['node', scenario, join(ROOT, 'dist'), out], {
      timeoutMs: 30 * 60_000,
      outDir: out,
      memMb: 2048,
      cpus: 2,
    });
    const line = run.stdout.split('\n').find((l: string) => l.startsWith('RESULT '));
    assert.ok(line, `the scenario printed no result (exit ${run.code}): ${run.stderr.slice(-2000)} ${run.stdout.slice(-2000)}`);
    r = JSON.parse(line.slice('RESULT '.length)) as Results;
    assert.equal(r.error, undefined, `the scenario failed: ${r.error}`);
  });
  after(() => {
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it('pod to pod across encrypting nodes, IPv4 and IPv6; the rule at 99 and the table through the device', () => {
    assert.equal(r.v4, true, 'IPv4 pod to pod');
    assert.equal(r.v6, true, 'IPv6 pod to pod');
    assert.equal(r.handshake, true, 'the devices shook hands');
    assert.match(r.rule, /^99:\s+not from all fwmark 0x100000\/0x100000 lookup 1$/);
    assert.match(r.table, /10\.65\.2\.0\/26 dev wireguard\.cali proto 81 scope link/);
    assert.deepEqual(r.resyncFailures, [], 'a resync afterwards finds nothing to repair that fails');
  });

  it('the underlay between encrypting nodes carries pod traffic only as UDP to the WireGuard ports: no pod address in clear', () => {
    const file = join(out, 'n2-eth0.pcap');
    assert.ok(existsSync(file), 'the capture of node 2 underlay');
    const packets = ipPackets(file).filter((p) => !isClearNodePod(p.src) && !isClearNodePod(p.dst));
    const bare = packets.filter((p) => isPod(p.src) || isPod(p.dst));
    assert.deepEqual(bare, [], 'no packet with a pod address of an encrypting node on the wire');
    const wg = packets.filter((p) => p.proto === 17 && (p.dport === 51820 || p.dport === 51821));
    assert.ok(wg.some((p) => p.dport === 51820) && wg.some((p) => p.dport === 51821), 'WireGuard over IPv4 and IPv6');
    // The underlay's own IPv6 upkeep: neighbour discovery (ICMPv6) and MLD reports (hop-by-hop).
    const others = packets.filter((p) => !wg.includes(p) && p.proto !== 58 && p.proto !== 0);
    assert.deepEqual(others, [], 'nothing else crossed between the nodes');
  });

  it('a node joining is reached within seconds of the cluster knowing it', () => {
    assert.ok(r.joinReachedMs >= 0 && r.joinReachedMs < 10_000, `IPv4: ${r.joinReachedMs} ms after programming`);
    assert.ok(r.joinReachedV6Ms >= 0 && r.joinReachedV6Ms < 10_000, `IPv6: ${r.joinReachedV6Ms} ms`);
    assert.ok(r.joinProgrammedMs < 60_000, `the three felixes programmed it in ${r.joinProgrammedMs} ms (emulated CPU)`);
  });

  it('a node key changing: the others follow and traffic resumes', () => {
    assert.ok(r.rotateReachedMs >= 0, `IPv4 resumed after ${r.rotateReachedMs} ms`);
    assert.ok(r.rotateReachedV6Ms >= 0, `IPv6 resumed after ${r.rotateReachedV6Ms} ms`);
    assert.deepEqual(r.n1PeersAfterRotate, r.n2KeysNow, "node 1's peers are the new key of node 2 and node 3's key");
    assert.equal(r.finalV4, true, 'still flowing at the end');
  });

  it('a node without WireGuard reaches the others and is reached, in clear', () => {
    assert.equal(r.n4HasDevice, false, 'no device on it');
    assert.ok(r.clearTo >= 0, 'reached from an encrypting node');
    assert.ok(r.clearFrom >= 0, 'reaches an encrypting node');
    assert.ok(r.clearV6 >= 0, 'over IPv6 too');
    const packets = ipPackets(join(out, 'n4-eth0.pcap'));
    assert.ok(
      packets.some((p) => p.proto === 1 && isClearNodePod(p.src) && isPod(p.dst)),
      'its pod traffic is plain ICMP between pod addresses on the wire',
    );
    assert.ok(
      packets.some((p) => p.proto === 58 && isClearNodePod(p.dst) && isPod(p.src)),
      'IPv6 too',
    );
  });

  it('a peer change through netlink is cheaper than through the wg tool', () => {
    assert.ok(r.peerChangeMs.netlink < r.peerChangeMs.wgTool, JSON.stringify(r.peerChangeMs));
  });
});
