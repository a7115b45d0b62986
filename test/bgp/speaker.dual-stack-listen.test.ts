// A dual-stack node's speaker listens on its IPv4 and its IPv6 address on one port
// (listen.alsoHosts), so peers of either family can open the session, and a peer's TCP-MD5
// key is set on the listener its family reaches: keyed peers of both families come up by
// connecting to it, a peer with the wrong password never does.
import assert from 'node:assert/strict';
import { BgpSpeaker, loadTcpMd5, type NeighborConfig } from '../../bgp/index.js';
import { waitFor } from '../support/wait.js';
import { freePort } from '../../bgp/session/free-port.js';

const common = { holdTime: 9, connectRetryTime: 1, idleHoldTime: 0.2 };

describe('dual stack: a speaker listening on an IPv4 and an IPv6 address', function () {
  this.timeout(60_000);
  const speakers: BgpSpeaker[] = [];
  afterEach(async () => {
    await Promise.all(speakers.splice(0).map((s) => s.stop()));
  });

  async function run(password: { node?: string; v4?: string; v6?: string }): Promise<[BgpSpeaker, BgpSpeaker, BgpSpeaker]> {
    const port = await freePort();
    const node = new BgpSpeaker({ asn: 64512, routerId: '127.0.0.1', listen: { host: '127.0.0.1', alsoHosts: ['::1'], port } });
    // The dialling sides listen nowhere: only the node's two listeners can bring the sessions up.
    const v4 = new BgpSpeaker({ asn: 64512, routerId: '10.0.0.4', listen: false });
    const v6 = new BgpSpeaker({ asn: 64512, routerId: '10.0.0.6', listen: false });
    speakers.push(node, v4, v6);
    assert.equal(await node.start(), port);
    const cfg = (address: string, p: string | undefined, extra: Partial<NeighborConfig> = {}): NeighborConfig => ({
      address,
      asn: 64512,
      ...common,
      ...(p !== undefined ? { password: p } : {}),
      ...extra,
    });
    node.addPeer(cfg('127.0.0.2', password.node, { passive: true, families: ['ipv4-unicast'] }));
    node.addPeer(cfg('::1', password.node, { passive: true, families: ['ipv6-unicast'] }));
    v4.addPeer(cfg('127.0.0.1', password.v4, { port, localAddress: '127.0.0.2', families: ['ipv4-unicast'] }));
    v6.addPeer(cfg('::1', password.v6, { port, localAddress: '::1', families: ['ipv6-unicast'] }));
    return [node, v4, v6];
  }

  const state = (s: BgpSpeaker, address: string) => s.peerStatus().find((p) => p.address === address)?.state;

  it('peers of both families connect to it; each session carries its family', async () => {
    const [node, v4, v6] = await run({});
    for (const a of ['127.0.0.2', '::1'])
      await waitFor(() => state(node, a), { what: `session with ${a}`, until: (s) => s === 'Established', timeoutMs: 20_000 });
    node.originate('fd00:94::/122');
    node.originate('10.94.0.0/26');
    await waitFor(() => v6.routes('ipv6-unicast').map((r) => r.prefix), { what: 'v6 route', until: (p) => p.includes('fd00:94::/122') });
    await waitFor(() => v4.routes('ipv4-unicast').map((r) => r.prefix), { what: 'v4 route', until: (p) => p.includes('10.94.0.0/26') });
    assert.deepEqual(
      v6.routes('ipv4-unicast').filter((r) => r.peer?.type !== 'local'),
      [],
    );
    assert.deepEqual(
      v4.routes('ipv6-unicast').filter((r) => r.peer?.type !== 'local'),
      [],
    );
  });

  it('TCP-MD5: keys reach both listeners; a wrong password keeps its session down', async function () {
    if (!loadTcpMd5()) this.skip();
    const [node] = await run({ node: 's3cret', v4: 's3cret', v6: 'wrong' });
    await waitFor(() => state(node, '127.0.0.2'), { what: 'keyed IPv4 session', until: (s) => s === 'Established', timeoutMs: 20_000 });
    await new Promise((r) => setTimeout(r, 3000));
    assert.notEqual(state(node, '::1'), 'Established');
    await Promise.all(speakers.splice(0).map((s) => s.stop()));
    const [node2] = await run({ node: 's3cret', v4: 's3cret', v6: 's3cret' });
    await waitFor(() => state(node2, '::1'), { what: 'keyed IPv6 session', until: (s) => s === 'Established', timeoutMs: 20_000 });
  });
});
