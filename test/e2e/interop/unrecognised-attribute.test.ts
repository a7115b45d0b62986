// RFC 4271 §5 and §9 against real peers: ExaBGP sends us a route carrying attributes no one
// here recognises (type 99 optional transitive, type 100 optional non-transitive); GoBGP,
// downstream of us, must receive type 99 with its Partial bit set and never see type 100.
import assert from 'node:assert/strict';
import { Exabgp } from '../../support/exabgp.js';
import { Gobgp, type GobgpPath } from '../../support/gobgp.js';
import { waitEstablished, waitRoutes } from '../../support/lab.js';
import { Lab } from '../../support/netns.js';
import { Podroute } from '../../support/podroute.js';
import { waitFor } from '../../support/wait.js';

const PR = { asn: 65000, v4: '10.96.0.10' };
const X = { asn: 65011, v4: '10.96.0.1' }; // ExaBGP: the route's source
const G = { asn: 65012, v4: '10.96.0.2' }; // GoBGP: hears it from us
const PREFIX = '10.231.0.0/24';

describe('unrecognised optional attributes through our speaker: ExaBGP -> podroute bgpd -> GoBGP', function () {
  this.timeout(90_000);
  let lab: Lab;
  let pr: Podroute;
  let gobgp: Gobgp;

  before(async () => {
    lab = new Lab({ tag: 'ua' });
    const sw = await lab.segment();
    const [nsPr, nsX, nsG] = await Promise.all([lab.namespace('pr'), lab.namespace('x'), lab.namespace('g')]);
    await sw.attach(nsPr, { v4: `${PR.v4}/24` });
    await sw.attach(nsX, { v4: `${X.v4}/24` });
    await sw.attach(nsG, { v4: `${G.v4}/24` });
    gobgp = await Gobgp.start(nsG, { routerId: G.v4, asn: G.asn, peers: [{ address: PR.v4, remoteAs: PR.asn }] });
    pr = await Podroute.start(nsPr, {
      routerId: PR.v4,
      asn: PR.asn,
      peers: [
        { address: X.v4, remoteAs: X.asn, passive: true },
        { address: G.v4, remoteAs: G.asn },
      ],
    });
    await Exabgp.start(nsX, {
      routerId: X.v4,
      asn: X.asn,
      peers: [{ address: PR.v4, remoteAs: PR.asn }],
      networks: [
        {
          prefix: PREFIX,
          rawAttributes: [
            { type: 99, flags: 0xc0, value: Buffer.from('0a0b0c0d', 'hex') },
            { type: 100, flags: 0x80, value: Buffer.from('ee', 'hex') },
          ],
        },
      ],
    });
  });

  after(async () => {
    await lab?.destroy();
  });

  it('GoBGP gets type 99 with flags 0xE0 (Partial set) and its value unchanged, and no type 100', async () => {
    await waitEstablished(pr);
    await waitRoutes(gobgp, 'ipv4', [PREFIX]);
    const rib = await waitFor(() => gobgp.rib('ipv4') as Promise<Record<string, GobgpPath[]>>, {
      what: `gobgp: ${PREFIX} in its RIB`,
      until: (r) => (r[PREFIX]?.length ?? 0) > 0,
    });
    const [path] = rib[PREFIX]!;
    const t99 = path!.attrs.find((a) => a.type === 99);
    assert.ok(t99, `type 99 reached GoBGP: ${JSON.stringify(path!.attrs)}`);
    assert.equal(t99.flags, 0xe0, `type 99 flags as GoBGP received them: ${JSON.stringify(t99)}`);
    assert.equal(Buffer.from(t99.value as string, 'base64').toString('hex'), '0a0b0c0d');
    assert.equal(
      path!.attrs.some((a) => a.type === 100),
      false,
      'an unrecognised non-transitive attribute is not passed on',
    );
    // And we did receive both, as ExaBGP sent them.
    const ours = (await pr.paths('ipv4')).find((r) => r.prefix === PREFIX);
    assert.deepEqual(
      (ours?.attributes.unknown ?? []).map((u) => [u.type, u.flags]),
      [
        [99, 0xc0],
        [100, 0x80],
      ],
    );
  });
});
