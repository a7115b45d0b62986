// FRR as the route reflector, our speakers (`podroute bgpd`) as its clients: we accept the
// routes it reflects (original next hop, ORIGINATOR_ID, CLUSTER_LIST), and drop one whose
// ORIGINATOR_ID is our own router ID. ExaBGP, a non-client of FRR, injects that route (and a
// control route), so FRR reflects it to both clients and only one of them must refuse it.
import assert from 'node:assert/strict';
import { Exabgp } from '../../support/exabgp.js';
import { Frr } from '../../support/frr.js';
import { waitEstablished, waitRoutes } from '../../support/lab.js';
import { Lab } from '../../support/netns.js';
import { Podroute } from '../../support/podroute.js';
import { waitFor } from '../../support/wait.js';

const AS = 64512;
const FRR = '10.96.0.1';
const INJECTOR = '10.96.0.9';
const ours = [
  { name: 'pr2', address: '10.96.0.2', prefix: '10.196.2.0/24' },
  { name: 'pr3', address: '10.96.0.3', prefix: '10.196.3.0/24' },
] as const;
const LOOPED = '10.196.9.0/24'; // ORIGINATOR_ID = pr2's router ID
const PLAIN = '10.196.10.0/24';

describe('FRR as the reflector, our speakers as clients', function () {
  this.timeout(90_000);
  let lab: Lab;
  let frr: Frr;
  const pr: Podroute[] = [];

  before(async () => {
    lab = new Lab({ tag: 'rf' });
    const sw = await lab.segment();
    const nsFrr = await lab.namespace('frr');
    const nsExa = await lab.namespace('exa');
    await sw.attach(nsFrr, { v4: `${FRR}/24` });
    await sw.attach(nsExa, { v4: `${INJECTOR}/24` });
    frr = await Frr.start(nsFrr, {
      routerId: FRR,
      asn: AS,
      peers: [
        ...ours.map((o) => ({ address: o.address, remoteAs: AS, routeReflectorClient: true })),
        { address: INJECTOR, remoteAs: AS, passive: true },
      ],
    });
    for (const o of ours) {
      const ns = await lab.namespace(o.name);
      await sw.attach(ns, { v4: `${o.address}/24` });
      pr.push(await Podroute.start(ns, { routerId: o.address, asn: AS, peers: [{ address: FRR, remoteAs: AS }], networks: [o.prefix] }));
    }
    await Exabgp.start(nsExa, {
      routerId: INJECTOR,
      asn: AS,
      peers: [{ address: FRR, remoteAs: AS }],
      networks: [{ prefix: LOOPED, originatorId: ours[0].address }, PLAIN],
    });
  });

  after(async () => {
    await lab?.destroy();
  });

  it('our clients reach Established with FRR', async () => {
    for (const p of pr) await waitEstablished(p);
  });

  it("each of our clients accepts the other one's route as FRR reflects it: next hop, ORIGINATOR_ID and CLUSTER_LIST as sent", async () => {
    for (const [i, p] of pr.entries()) {
      const other = ours[1 - i]!;
      await waitRoutes(p, 'ipv4', [other.prefix]);
      const [r] = (await p.paths('ipv4')).filter((x) => x.prefix === other.prefix);
      assert.equal(r!.from, FRR);
      assert.equal(r!.nextHop, other.address);
      assert.equal(r!.attributes.originatorId, other.address);
      assert.deepEqual(r!.attributes.clusterList, [FRR], "FRR's cluster ID defaults to its router ID");
    }
  });

  it('a reflected route whose ORIGINATOR_ID is our router ID is dropped by that speaker only', async () => {
    // pr3 accepts both injected routes: FRR did reflect them, with the ORIGINATOR_ID ExaBGP set.
    await waitRoutes(pr[1]!, 'ipv4', [LOOPED, PLAIN]);
    const looped = (await pr[1]!.paths('ipv4')).find((x) => x.prefix === LOOPED)!;
    assert.equal(looped.attributes.originatorId, ours[0].address);
    // pr2 took the control route (so the injected routes reached it)…
    await waitRoutes(pr[0]!, 'ipv4', [PLAIN]);
    const plain = (await pr[0]!.paths('ipv4')).find((x) => x.prefix === PLAIN)!;
    assert.equal(plain.attributes.originatorId, INJECTOR);
    // …FRR says it sent pr2 the looped one too…
    const adv = await waitFor(
      () =>
        frr.json<{ advertisedRoutes?: Record<string, unknown> }>(
          `show bgp ipv4 unicast neighbors ${ours[0].address} advertised-routes json`,
        ),
      {
        what: `FRR advertising ${LOOPED} to ${ours[0].address}`,
        until: (x) => x.advertisedRoutes?.[LOOPED] !== undefined,
        timeoutMs: 10_000,
      },
    );
    assert.ok(adv.advertisedRoutes?.[PLAIN], `FRR does not advertise ${PLAIN} to ${ours[0].address}`);
    // …and pr2 holds everything but it. FRR also reflects pr2's own route back to it (it has
    // no split horizon towards the originating client): that one carries pr2's router ID as
    // ORIGINATOR_ID too, and pr2 keeps only its local path.
    const advertised = Object.keys(adv.advertisedRoutes ?? {}).sort();
    assert.ok(advertised.includes(ours[0].prefix), advertised.join(', '));
    const held = await pr[0]!.paths('ipv4');
    assert.ok(!held.some((x) => x.prefix === LOOPED), `pr2 holds ${held.map((x) => x.prefix).join(', ')}`);
    assert.deepEqual(
      held.filter((x) => x.prefix === ours[0].prefix).map((x) => x.from),
      ['local'],
    );
    const fromFrr = (await pr[0]!.status()).peers.find((p) => p.address === FRR)!;
    assert.equal(
      fromFrr.prefixesReceived,
      advertised.length - 2,
      `FRR sent ${advertised.join(', ')}; pr2 kept ${fromFrr.prefixesReceived}`,
    );
  });
});
