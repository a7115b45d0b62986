// Reflectors of different clusters peering as non-clients (a hierarchy), through the library
// API the node agent uses, in one process over loopback: a client route crosses both
// clusters with both cluster IDs in CLUSTER_LIST, the next hop and ORIGINATOR_ID unchanged.
import assert from 'node:assert/strict';
import { BgpSpeaker } from '../../bgp/index.js';
import { RouteReflector } from '../../reflector/index.js';
import { waitFor } from '../support/wait.js';

const AS = 64512;
const timers = { holdTime: 30, connectRetryTime: 1, idleHoldTime: 1, families: ['ipv4-unicast' as const] };

describe('reflector hierarchy: two clusters, reflectors as non-clients of each other (loopback)', function () {
  this.timeout(30_000);
  const stops: Array<() => Promise<void>> = [];
  after(async () => {
    for (const s of stops) await s().catch(() => undefined);
  });

  it("a client route reaches the other cluster's client with CLUSTER_LIST [B, A]; a non-client route stays out of non-clients", async () => {
    const rrA = new RouteReflector({ asn: AS, routerId: '10.250.0.1', clusterId: '10.250.0.100', listen: { host: '127.3.0.1', port: 0 } });
    const rrB = new RouteReflector({ asn: AS, routerId: '10.250.0.2', clusterId: '10.250.0.200', listen: { host: '127.3.0.2', port: 0 } });
    stops.push(
      () => rrA.stop(),
      () => rrB.stop(),
    );
    const portA = (await rrA.start())!;
    const portB = (await rrB.start())!;
    // A connects to B; B waits for A (both sides configured one by one).
    rrA.addNonClient({ address: '127.3.0.2', asn: AS, port: portB, localAddress: '127.3.0.1', ...timers });
    rrB.addNonClient({ address: '127.3.0.1', asn: AS, passive: true, ...timers });
    rrA.addClientRange({ range: '127.3.1.0/24', asn: AS, ...timers });
    rrB.addClientRange({ range: '127.3.2.0/24', asn: AS, ...timers });
    const client = (routerId: string, local: string, rr: string, port: number, prefix: string) => {
      const s = new BgpSpeaker({ asn: AS, routerId, listen: false });
      s.originate(prefix);
      s.addPeer({ address: rr, asn: AS, port, localAddress: local, ...timers });
      stops.push(() => s.stop());
      return s;
    };
    const cA = client('10.250.1.1', '127.3.1.1', '127.3.0.1', portA, '10.251.1.0/26');
    const cB = client('10.250.2.1', '127.3.2.1', '127.3.0.2', portB, '10.251.2.0/26');
    // A non-client of B that is not a reflector: an iBGP router of the full mesh.
    const mesh = new BgpSpeaker({ asn: AS, routerId: '10.250.3.1', listen: false });
    mesh.originate('10.251.3.0/26');
    mesh.addPeer({ address: '127.3.0.2', asn: AS, port: portB, localAddress: '127.3.3.1', ...timers });
    rrB.addNonClient({ address: '127.3.3.1', asn: AS, passive: true, ...timers });
    stops.push(() => mesh.stop());

    const fromA = (await waitFor(() => cB.lookup('10.251.1.0/26')?.best, { what: "cB to learn cA's route" }))!;
    assert.equal(fromA.nextHop, '127.3.1.1');
    assert.equal(fromA.attributes.originatorId, '10.250.1.1');
    assert.deepEqual(fromA.attributes.clusterList, ['10.250.0.200', '10.250.0.100']);
    const fromB = (await waitFor(() => cA.lookup('10.251.2.0/26')?.best, { what: "cA to learn cB's route" }))!;
    assert.deepEqual(fromB.attributes.clusterList, ['10.250.0.100', '10.250.0.200']);
    // The mesh router's route (from a non-client of B) goes to B's client only, not to A (a non-client).
    const fromMesh = (await waitFor(() => cB.lookup('10.251.3.0/26')?.best, { what: "cB to learn the mesh router's route" }))!;
    assert.deepEqual(fromMesh.attributes.clusterList, ['10.250.0.200']);
    assert.equal(fromMesh.attributes.originatorId, '10.250.3.1');
    // B learned cA's route from non-client A, so it reflects it to its clients only. Absence
    // needs a moment to be meaningful: by then B has long sent the mesh router what it would.
    await waitFor(() => mesh.lookup('10.251.2.0/26')?.best, { what: "mesh to learn cB's route" });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(mesh.lookup('10.251.1.0/26'), undefined, 'a route B learned from non-client A is not reflected to non-client mesh');
    assert.equal(rrA.speaker.lookup('10.251.3.0/26'), undefined, 'nor is the mesh route reflected to non-client A');
    const sA = rrA.status();
    assert.deepEqual(sA.peers.map((p) => p.role).sort(), ['client', 'non-client']);
  });
});
