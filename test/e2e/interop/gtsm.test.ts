// GTSM (RFC 5082) against real FRR, with `podroute bgpd` in its own namespace and ttlSecurity 1 on
// its peers: FRR with `ttl-security hops 1` comes up over IPv4 and IPv6 and exchanges routes; a
// plain eBGP FRR, which sends TTL 1 to a directly connected peer, never does: our kernel drops its
// segments (TCPMinTTLDrop), and the capture shows that what we send carries TTL (hop limit) 255.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { PacketCapture } from '../../support/capture.js';
import { Frr } from '../../support/frr.js';
import { waitEstablished, waitRoutes } from '../../support/lab.js';
import { Lab, type Netns } from '../../support/netns.js';
import { Podroute } from '../../support/podroute.js';
import { sleep, waitFor } from '../../support/wait.js';

const PR = { asn: 65010, v4: '10.97.0.10', v6: 'fd00:97::10' };
const GOOD = { asn: 65001, v4: '10.97.0.1', v6: 'fd00:97::1' };
const PLAIN = { asn: 65002, v4: '10.97.0.2', v6: 'fd00:97::2' };

async function tcpExt(ns: Netns): Promise<Record<string, number>> {
  const lines = (await ns.run(['cat', '/proc/net/netstat'])).split('\n').filter((l) => l.startsWith('TcpExt:'));
  const names = lines[0]!.split(/\s+/).slice(1);
  const values = lines[1]!.split(/\s+/).slice(1).map(Number);
  return Object.fromEntries(names.map((n, i) => [n, values[i]!]));
}

/**
 * TTL (or hop limit) of every packet from `src` in a capture file, but resets: a peer that dials
 * before our listener is up meets the kernel's own reset, which no socket option governs.
 */
function ttlsFrom(file: string, src: string): number[] {
  const v6 = src.includes(':');
  const out = execFileSync(
    'tshark',
    ['-r', file, '-Y', `${v6 ? 'ipv6' : 'ip'}.src == ${src} && tcp.flags.reset == 0`, '-T', 'fields', '-e', v6 ? 'ipv6.hlim' : 'ip.ttl'],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
  );
  return out.split('\n').filter(Boolean).map(Number);
}

describe('GTSM (ttlSecurity) with FRR (podroute bgpd)', function () {
  this.timeout(120_000);
  let lab: Lab;
  let pr: Podroute;
  let good: Frr;
  let plain: Frr;
  let capture: PacketCapture;
  const ns: Record<string, Netns> = {};

  before(async () => {
    lab = new Lab({ tag: 'gtsm' });
    const sw = await lab.segment();
    for (const [name, a] of Object.entries({ pr: PR, good: GOOD, plain: PLAIN })) {
      ns[name] = await lab.namespace(name);
      await sw.attach(ns[name]!, { v4: `${a.v4}/24`, v6: `${a.v6}/64` });
    }
    capture = await PacketCapture.start(ns.pr!, { name: 'pr-gtsm' });
    [good, plain] = await Promise.all([
      Frr.start(
        ns.good!,
        {
          routerId: GOOD.v4,
          asn: GOOD.asn,
          peers: [
            { address: PR.v4, remoteAs: PR.asn, ttlSecurityHops: 1 },
            { address: PR.v6, remoteAs: PR.asn, families: ['ipv6'], ttlSecurityHops: 1 },
          ],
          networks: ['10.231.0.0/24', '2001:db8:231::/48'],
        },
        // zebra: bgpd alone takes no IPv6 next hop for reachable.
      ),
      Frr.start(ns.plain!, { routerId: PLAIN.v4, asn: PLAIN.asn, peers: [{ address: PR.v4, remoteAs: PR.asn }] }, { zebra: false }),
    ]);
    pr = await Podroute.start(ns.pr!, {
      routerId: PR.v4,
      asn: PR.asn,
      nextHopV6: PR.v6,
      peers: [
        { address: GOOD.v4, remoteAs: GOOD.asn, ttlSecurityHops: 1 },
        { address: GOOD.v6, remoteAs: GOOD.asn, families: ['ipv6'], ttlSecurityHops: 1 },
        { address: PLAIN.v4, remoteAs: PLAIN.asn, ttlSecurityHops: 1 },
      ],
      networks: ['10.230.0.0/24', '2001:db8:230::/48'],
    });
  });

  after(async () => {
    await capture?.stop();
    await lab?.destroy();
  });

  it('FRR with ttl-security hops 1: Established over IPv4 and IPv6, routes both ways', async () => {
    await waitEstablished(good, 45_000);
    await waitRoutes(good, 'ipv4', ['10.230.0.0/24']);
    await waitRoutes(good, 'ipv6', ['2001:db8:230::/48']);
    await waitRoutes(pr, 'ipv4', ['10.231.0.0/24']);
    await waitRoutes(pr, 'ipv6', ['2001:db8:231::/48']);
  });

  it('a plain eBGP FRR (TTL 1) is not accepted: our kernel drops its segments and no session comes up', async () => {
    await waitFor(() => tcpExt(ns.pr!), {
      what: 'our kernel to drop segments below the least TTL (TCPMinTTLDrop)',
      until: (c) => (c.TCPMinTTLDrop ?? 0) >= 2,
      timeoutMs: 30_000,
    });
    await sleep(3_000);
    const theirs = await plain.peers();
    assert.equal(theirs.length, 1, 'the plain FRR has its one neighbour');
    assert.equal(theirs[0]!.established, false, `plain FRR is ${theirs[0]!.state}`);
    const ours = (await pr.status()).peers.find((p) => p.address === PLAIN.v4)!;
    assert.notEqual(ours.state, 'Established', 'our session with the plain FRR came up');
    assert.equal(ours.messagesIn, 0, 'no message of the plain FRR reached the session');
    assert.ok(
      (await good.peers()).every((p) => p.established),
      'the GTSM sessions stayed up',
    );
  });

  it('what we send carries TTL 255 (IPv4) and hop limit 255 (IPv6)', async () => {
    await capture.stop();
    const v4 = ttlsFrom(capture.file, PR.v4);
    const v6 = ttlsFrom(capture.file, PR.v6);
    assert.ok(v4.length > 0 && v6.length > 0, `captured ${v4.length} IPv4 and ${v6.length} IPv6 packets from us`);
    assert.deepEqual([...new Set(v4)], [255], 'IPv4 TTLs');
    assert.deepEqual([...new Set(v6)], [255], 'IPv6 hop limits');
  });
});
