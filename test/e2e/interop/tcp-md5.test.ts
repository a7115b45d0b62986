// TCP-MD5 (RFC 2385) against real FRR and BIRD, with `podroute bgpd` in its own namespace:
// with the right password FRR (over IPv4, we connect) and BIRD (over IPv6, it connects to our
// listener) come up and exchange routes, and the capture shows the MD5 option (kind 19) on
// the SYNs both ways; with a wrong password, or none on the other side, the kernels drop the
// segments (their MD5 counters say so) and neither daemon's own state reaches Established.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { Bird } from '../../support/bird.js';
import type { PeerStatus } from '../../support/bgp-config.js';
import { PacketCapture } from '../../support/capture.js';
import { Frr } from '../../support/frr.js';
import { waitEstablished, waitRoutes } from '../../support/lab.js';
import { Lab, type Netns } from '../../support/netns.js';
import { Podroute } from '../../support/podroute.js';
import { waitFor } from '../../support/wait.js';

const PR = { asn: 65010, v4: '10.96.0.10', v6: 'fd00:96::10' };
const FRR = { asn: 65001, v4: '10.96.0.1', v6: 'fd00:96::1', password: 'frr-md5-key' };
const BIRD = { asn: 65002, v4: '10.96.0.2', v6: 'fd00:96::2', password: 'bird-md5-key' };
const FRR_WRONG = { asn: 65003, v4: '10.96.0.3', v6: 'fd00:96::3', password: 'not-the-key' };
const BIRD_NONE = { asn: 65004, v4: '10.96.0.4', v6: 'fd00:96::4' };

/** The kernel's TcpExt counters of a namespace (TCPMD5Failure, TCPMD5NotFound, TCPMD5Unexpected, ...). */
async function tcpExt(ns: Netns): Promise<Record<string, number>> {
  const lines = (await ns.run(['cat', '/proc/net/netstat'])).split('\n').filter((l) => l.startsWith('TcpExt:'));
  const names = lines[0]!.split(/\s+/).slice(1);
  const values = lines[1]!.split(/\s+/).slice(1).map(Number);
  return Object.fromEntries(names.map((n, i) => [n, values[i]!]));
}

interface Syn {
  src: string;
  dst: string;
  dstPort: number;
  ack: boolean;
  options: number[];
}

/** SYN and SYN-ACK segments of a capture file, with their TCP option kinds, as tshark reads them. */
function syns(file: string): Syn[] {
  const out = execFileSync(
    'tshark',
    [
      '-r',
      file,
      '-Y',
      'tcp.flags.syn == 1',
      '-T',
      'fields',
      '-E',
      'separator=|',
      '-e',
      'ip.src',
      '-e',
      'ipv6.src',
      '-e',
      'ip.dst',
      '-e',
      'ipv6.dst',
      '-e',
      'tcp.dstport',
      '-e',
      'tcp.flags.ack',
      '-e',
      'tcp.option_kind',
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
  );
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [s4, s6, d4, d6, port, ack, kinds] = l.split('|');
      return {
        src: s4 || s6!,
        dst: d4 || d6!,
        dstPort: Number(port),
        ack: ack === '1' || ack === 'True',
        options: (kinds ?? '').split(',').filter(Boolean).map(Number),
      };
    });
}

describe('TCP-MD5 with FRR and BIRD (podroute bgpd)', function () {
  this.timeout(120_000);
  let lab: Lab;
  let pr: Podroute;
  let frr: Frr;
  let bird: Bird;
  let frrWrong: Frr;
  let birdNone: Bird;
  let capture: PacketCapture;
  const ns: Record<string, Netns> = {};

  before(async () => {
    lab = new Lab({ tag: 'md5' });
    const sw = await lab.segment();
    for (const [name, a] of Object.entries({ pr: PR, frr: FRR, bird: BIRD, frrx: FRR_WRONG, birdx: BIRD_NONE })) {
      ns[name] = await lab.namespace(name);
      await sw.attach(ns[name]!, { v4: `${a.v4}/24`, v6: `${a.v6}/64` });
    }
    capture = await PacketCapture.start(ns.pr!, { name: 'pr-md5' });
    [frr, bird, frrWrong, birdNone] = await Promise.all([
      // FRR only listens, so the session it gets is one our speaker opened: our SYN is signed.
      Frr.start(
        ns.frr!,
        {
          routerId: FRR.v4,
          asn: FRR.asn,
          peers: [{ address: PR.v4, remoteAs: PR.asn, passive: true, password: FRR.password }],
          networks: ['10.221.0.0/24'],
        },
        { zebra: false },
      ),
      Bird.start(ns.bird!, {
        routerId: BIRD.v4,
        asn: BIRD.asn,
        peers: [{ address: PR.v6, remoteAs: PR.asn, families: ['ipv6'], password: BIRD.password }],
        networks: ['2001:db8:222::/48'],
      }),
      Frr.start(
        ns.frrx!,
        { routerId: FRR_WRONG.v4, asn: FRR_WRONG.asn, peers: [{ address: PR.v4, remoteAs: PR.asn, password: FRR_WRONG.password }] },
        { zebra: false },
      ),
      Bird.start(ns.birdx!, { routerId: BIRD_NONE.v4, asn: BIRD_NONE.asn, peers: [{ address: PR.v4, remoteAs: PR.asn }] }),
    ]);
    pr = await Podroute.start(ns.pr!, {
      routerId: PR.v4,
      asn: PR.asn,
      peers: [
        { address: FRR.v4, remoteAs: FRR.asn, password: FRR.password },
        // BIRD's session is the one it opens to our listener.
        { address: BIRD.v6, remoteAs: BIRD.asn, families: ['ipv6'], passive: true, password: BIRD.password },
        { address: FRR_WRONG.v4, remoteAs: FRR_WRONG.asn, password: 'frrx-md5-key' },
        { address: BIRD_NONE.v4, remoteAs: BIRD_NONE.asn, password: 'birdx-md5-key' },
      ],
      networks: ['10.220.0.0/24', '2001:db8:220::/48'],
    });
  });

  after(async () => {
    await lab?.destroy();
  });

  it('the right password: FRR (we connect, IPv4) and BIRD (it connects, IPv6) reach Established and exchange routes', async () => {
    await waitEstablished(frr, 45_000);
    await waitEstablished(bird, 45_000);
    await waitRoutes(frr, 'ipv4', ['10.220.0.0/24']);
    await waitRoutes(bird, 'ipv6', ['2001:db8:220::/48']);
    await waitRoutes(pr, 'ipv4', ['10.221.0.0/24']);
    await waitRoutes(pr, 'ipv6', ['2001:db8:222::/48']);
  });

  it('a wrong password (FRR) and none at all (BIRD): the kernels drop the segments and no session comes up', async () => {
    // Evidence that both directions were tried and refused by the kernels, not merely not yet tried.
    await waitFor(() => tcpExt(ns.frrx!), {
      what: 'FRR`s kernel to drop our signed SYNs (TCPMD5Failure)',
      until: (c) => (c.TCPMD5Failure ?? 0) >= 2,
      timeoutMs: 30_000,
    });
    await waitFor(() => tcpExt(ns.birdx!), {
      what: 'BIRD`s kernel to drop our signed SYNs, having no key (TCPMD5Unexpected)',
      until: (c) => (c.TCPMD5Unexpected ?? 0) >= 2,
      timeoutMs: 30_000,
    });
    await waitFor(() => tcpExt(ns.pr!), {
      what: 'our kernel to drop FRR`s wrongly signed SYNs (TCPMD5Failure) and BIRD`s unsigned ones (TCPMD5NotFound)',
      until: (c) => (c.TCPMD5Failure ?? 0) >= 1 && (c.TCPMD5NotFound ?? 0) >= 1,
      timeoutMs: 30_000,
    });
    const theirs: PeerStatus[] = [...(await frrWrong.peers()), ...(await birdNone.peers())];
    assert.equal(theirs.length, 2);
    for (const p of theirs) assert.equal(p.established, false, `${p.address} ${p.state}`);
    assert.ok(
      theirs.every((p) => ['Idle', 'Connect', 'Active'].includes(p.state)),
      `never past Active: ${JSON.stringify(theirs)}`,
    );
    const ours = (await pr.status()).peers.filter((p) => p.address === FRR_WRONG.v4 || p.address === BIRD_NONE.v4);
    assert.equal(ours.length, 2);
    for (const p of ours) {
      assert.ok(['Idle', 'Connect', 'Active'].includes(p.state), `${p.address} is ${p.state}`);
      assert.equal(p.messagesIn, 0);
    }
    // The good sessions were never disturbed.
    assert.ok(
      (await frr.peers()).every((p) => p.established),
      'an FRR session with the right key is down',
    );
    assert.ok(
      (await bird.peers()).every((p) => p.established),
      'a BIRD session with the right key is down',
    );
  });

  it('the capture shows the MD5 option (kind 19) on our SYN to FRR, on BIRD`s SYN to us and on our listener`s SYN-ACK', async () => {
    await capture.stop();
    const all = syns(capture.file);
    const ours = all.filter((s) => s.src === PR.v4 && s.dst === FRR.v4 && s.dstPort === 179 && !s.ack);
    const birds = all.filter((s) => s.src === BIRD.v6 && s.dst === PR.v6 && s.dstPort === 179 && !s.ack);
    const listener = all.filter((s) => s.src === PR.v6 && s.dst === BIRD.v6 && s.ack);
    for (const [what, list] of [
      ['our SYN to FRR', ours],
      ['BIRD`s SYN to us', birds],
      ['our SYN-ACK to BIRD', listener],
    ] as const) {
      assert.ok(list.length > 0, `${what}: none captured (${JSON.stringify(all)})`);
      for (const s of list) assert.ok(s.options.includes(19), `${what} without the MD5 option: ${JSON.stringify(s)}`);
    }
    // Every SYN between us and the two unkeyed-or-misskeyed peers that we sent is signed too.
    const toBad = all.filter((s) => s.src === PR.v4 && (s.dst === FRR_WRONG.v4 || s.dst === BIRD_NONE.v4) && !s.ack);
    assert.ok(toBad.length > 0, `no SYN captured from us to the mis-keyed or keyless peers (${all.length} segments captured)`);
    for (const s of toBad) assert.ok(s.options.includes(19), `unsigned SYN to ${s.dst}`);
    // BIRD without a password sends unsigned SYNs, which our kernel drops: no SYN-ACK ever goes back.
    assert.ok(
      all.some((s) => s.src === BIRD_NONE.v4 && !s.options.includes(19)),
      'BIRD without a password should have tried',
    );
    assert.ok(!all.some((s) => s.src === PR.v4 && s.dst === BIRD_NONE.v4 && s.ack), 'we answered an unsigned SYN');
  });
});
