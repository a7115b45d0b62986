// `podroute bgpd rib add|del` against FRR over eBGP: the next hop given with --next-hop is the
// one FRR receives (not the session's address), and deleting a prefix that was never
// originated is refused, where it used to print "deleted".
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Frr } from '../../support/frr.js';
import { execCommand, Lab } from '../../support/netns.js';
import { Podroute } from '../../support/podroute.js';
import { waitFor } from '../../support/wait.js';

const BIN = join(fileURLToPath(new URL('../../..', import.meta.url)), 'bin/podroute.js');
const PR = { asn: 65020, v4: '10.97.0.10' };
const F = { asn: 65021, v4: '10.97.0.1' };

describe('bgpd rib add --next-hop and rib del, against FRR', function () {
  this.timeout(90_000);
  let lab: Lab;
  let frr: Frr;
  let pr: Podroute;
  const cli = (...args: string[]) => execCommand(['node', BIN, 'bgpd', ...args, '--control', pr.control], { timeoutMs: 30_000 });

  before(async () => {
    lab = new Lab({ tag: 'nh' });
    const sw = await lab.segment();
    const nsPr = await lab.namespace('pr');
    const nsF = await lab.namespace('f');
    await sw.attach(nsPr, { v4: `${PR.v4}/24` });
    await sw.attach(nsF, { v4: `${F.v4}/24` });
    frr = await Frr.start(nsF, { routerId: F.v4, asn: F.asn, peers: [{ address: PR.v4, remoteAs: PR.asn }] }, { zebra: false });
    pr = await Podroute.start(nsPr, { routerId: PR.v4, asn: PR.asn, peers: [{ address: F.v4, remoteAs: F.asn }] });
    await waitFor(() => frr.neighbor(PR.v4), { what: 'FRR Established', until: (n) => n.bgpState === 'Established', timeoutMs: 30_000 });
  });

  after(async () => {
    await pr?.stop();
    await frr?.stop();
    await lab?.destroy();
  });

  it('FRR gets the next hop rib add names; without one, the session address', async () => {
    const add = await cli('rib', 'add', '10.9.1.0/24', '--next-hop', '10.97.0.5');
    assert.deepEqual([add.code, add.stdout, add.stderr], [0, 'added 10.9.1.0/24 next hop 10.97.0.5\n', '']);
    const plain = await cli('rib', 'add', '10.9.2.0/24');
    assert.equal(plain.code, 0, plain.stderr);
    const routes = await waitFor(() => frr.routes('ipv4'), {
      what: 'both prefixes at FRR',
      until: (r) => r.some((x) => x.prefix === '10.9.1.0/24') && r.some((x) => x.prefix === '10.9.2.0/24'),
      timeoutMs: 20_000,
    });
    const hop = (p: string) => routes.find((x) => x.prefix === p)?.nextHops[0];
    assert.equal(hop('10.9.1.0/24'), '10.97.0.5', 'the next hop given');
    assert.equal(hop('10.9.2.0/24'), PR.v4, "the session's own address");
  });

  it('rib del of a prefix never originated: exit 1 with the reason; of one originated: withdrawn at FRR', async () => {
    const never = await cli('rib', 'del', '10.77.0.0/16');
    assert.equal(never.code, 1, `exit ${never.code}: ${never.stdout}`);
    assert.equal(never.stdout, '');
    assert.match(never.stderr, /prefix: 10\.77\.0\.0\/16 is not a route this speaker originated/);
    const del = await cli('rib', 'del', '10.9.1.0/24');
    assert.deepEqual([del.code, del.stdout], [0, 'deleted 10.9.1.0/24\n']);
    await waitFor(() => frr.routes('ipv4'), {
      what: '10.9.1.0/24 withdrawn at FRR',
      until: (r) => !r.some((x) => x.prefix === '10.9.1.0/24'),
      timeoutMs: 20_000,
    });
  });
});
