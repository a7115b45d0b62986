// RFC 2545 §3 against FRR: to a peer on the same link, our IPv6 routes carry two next hops,
// the global address and our link-local address on that link (32 octets), as FRR sends them.
// Over an IPv6 session only: IPv6 routes over the IPv4 session keep the global next hop alone
// (a receiver such as FRR's bgpd without zebra cannot place a link-local one and withdraws).
import assert from 'node:assert/strict';
import { Frr } from '../../support/frr.js';
import { waitEstablished } from '../../support/lab.js';
import { Lab, type Netns } from '../../support/netns.js';
import { Podroute } from '../../support/podroute.js';
import { waitFor } from '../../support/wait.js';

const PR = { asn: 65020, v4: '10.97.0.10', v6: 'fd00:97::10' };
const FRR = { asn: 65021, v4: '10.97.0.1', v6: 'fd00:97::1' };

async function linkLocal(ns: Netns, ifname: string): Promise<string> {
  const out = await ns.run(['ip', '-6', '-o', 'addr', 'show', 'dev', ifname, 'scope', 'link']);
  const m = out.match(/inet6 (fe80::[0-9a-f:]+)\/64/);
  assert.ok(m, `no link-local address on ${ifname}: ${out}`);
  return m[1]!;
}

describe('speaker interop: the IPv6 link-local next hop (RFC 2545) with FRR', function () {
  this.timeout(90_000);
  let lab: Lab;
  let frr: Frr;
  let pr: Podroute;
  let prIf: string;
  let nsPr: Netns;

  before(async () => {
    lab = new Lab({ tag: 'll6' });
    const sw = await lab.segment();
    nsPr = await lab.namespace('pr');
    const nsFrr = await lab.namespace('frr');
    prIf = await sw.attach(nsPr, { v4: `${PR.v4}/24`, v6: `${PR.v6}/64` });
    await sw.attach(nsFrr, { v4: `${FRR.v4}/24`, v6: `${FRR.v6}/64` });
    frr = await Frr.start(nsFrr, {
      routerId: FRR.v4,
      asn: FRR.asn,
      peers: [
        { address: PR.v6, remoteAs: PR.asn, families: ['ipv6'] },
        { address: PR.v4, remoteAs: PR.asn, families: ['ipv6'] },
      ],
      networks: [],
    });
    pr = await Podroute.start(nsPr, {
      routerId: PR.v4,
      asn: PR.asn,
      nextHopV6: PR.v6,
      peers: [
        { address: FRR.v6, remoteAs: FRR.asn, families: ['ipv6'] },
        { address: FRR.v4, remoteAs: FRR.asn, families: ['ipv6'] },
      ],
      networks: ['2001:db8:97::/48'],
    });
  });

  after(async () => {
    await lab?.destroy();
  });

  it('FRR holds our route with the global and our link-local next hop over the IPv6 session, the global alone over IPv4', async () => {
    await waitEstablished(pr);
    const ll = await linkLocal(nsPr, prIf);
    const paths = await waitFor(async () => (await frr.routes('ipv6')).filter((r) => r.prefix === '2001:db8:97::/48'), {
      what: 'FRR holding our route from both sessions',
      until: (p) => p.length === 2,
      timeoutMs: 30_000,
    });
    const over = (address: string) => paths.find((p) => p.from === address);
    assert.deepEqual(over(PR.v6)?.nextHops, [PR.v6, ll], JSON.stringify(paths));
    assert.deepEqual(over(PR.v4)?.nextHops, [PR.v6], JSON.stringify(paths));
  });
});
