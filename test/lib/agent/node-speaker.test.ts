// The node's speaker and its life, with real speakers on loopback: which settings a Node asks
// for, a speaker kept while they hold and replaced when they change, and the events of every
// speaker it made reaching its listeners.
import assert from 'node:assert/strict';
import { connect, createServer, type Server } from 'node:net';
import type { BestPathChange } from '../../../bgp/index.js';
import { NodeSpeaker, speakerSettings, type SpeakerSettings } from '../../../lib/agent/node-speaker.js';
import { waitFor } from '../../support/wait.js';
import { freePort } from '../../../bgp/session/free-port.js';
import { API_VERSION, type Node } from '../../../lib/resources/index.js';

/** True when something accepts a TCP connection on 127.0.0.1:port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = connect(port, '127.0.0.1');
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}

const node = (bgp: NonNullable<Node['spec']['bgp']>): Node => ({
  apiVersion: API_VERSION,
  kind: 'Node',
  metadata: { name: 'n1' },
  spec: { bgp },
});

describe('agent node speaker', () => {
  it("settings: the Node's AS over the cluster's over 64512; bgpPort over listenPort over 179; the address is the router ID", () => {
    const config = {
      apiVersion: API_VERSION,
      kind: 'BGPConfiguration' as const,
      metadata: { name: 'default' },
      spec: { asNumber: 65000, listenPort: 1179 },
    };
    assert.deepEqual(speakerSettings(node({ ipv4Address: '10.0.0.1/24' }), undefined, '10.0.0.1/24'), {
      asn: 64512,
      port: 179,
      clusterId: undefined,
      routerId: '10.0.0.1',
      address: '10.0.0.1',
    });
    assert.deepEqual(speakerSettings(node({}), config, '10.0.0.1/24'), {
      asn: 65000,
      port: 1179,
      clusterId: undefined,
      routerId: '10.0.0.1',
      address: '10.0.0.1',
    });
    assert.deepEqual(speakerSettings(node({ asNumber: 65001, routeReflectorClusterID: '1.0.0.1' }), config, '10.0.0.1/24', 2179), {
      asn: 65001,
      port: 2179,
      clusterId: '1.0.0.1',
      routerId: '10.0.0.1',
      address: '10.0.0.1',
    });
    assert.equal(speakerSettings(node({ routeReflectorClusterID: '' }), undefined, '10.0.0.1/24').clusterId, undefined);
  });

  describe('with real speakers', () => {
    let bgp: NodeSpeaker;
    let logged: [string, Record<string, unknown>][];
    let blocker: Server | undefined;
    beforeEach(() => {
      logged = [];
      bgp = new NodeSpeaker({ hostname: 'n1', restarting: false, log: (e, f) => logged.push([e, f]) });
    });
    afterEach(async () => {
      await bgp.stop('test over');
      await new Promise<void>((resolve) => (blocker ? blocker.close(() => resolve()) : resolve()));
      blocker = undefined;
    });

    it("keeps the speaker while the settings hold; a new cluster ID makes a new one in its place, and the old one's events still arrive", async () => {
      const port = await freePort();
      const s: SpeakerSettings = { asn: 64512, port, clusterId: undefined, routerId: '127.0.0.1' };
      const changes: BestPathChange[] = [];
      bgp.on('bestPaths', (c) => changes.push(...c));
      const first = bgp.ensure(s);
      assert.equal(bgp.ensure({ ...s }), first);
      assert.equal(bgp.speaker, first);
      await waitFor(() => accepts(port), { what: `the first speaker listening on ${port}` });
      const second = bgp.ensure({ ...s, clusterId: '1.0.0.1' });
      assert.notEqual(second, first);
      assert.equal(bgp.speaker, second);
      assert.deepEqual(
        logged.filter(([e]) => e === 'speaker-rebuild').map(([, f]) => f),
        [{ from: `64512|${port}||127.0.0.1`, to: `64512|${port}|1.0.0.1|127.0.0.1` }],
      );
      // The new speaker holds the same port: the old one let it go.
      await waitFor(() => accepts(port), { what: `the new speaker listening on ${port}` });
      assert.deepEqual(
        logged.filter(([e]) => e === 'listen-error'),
        [],
      );
      // Withdrawals of the replaced speaker still reach the listener (felix must hear them).
      first.originate('10.70.0.0/26');
      second.originate('10.70.0.64/26');
      assert.deepEqual(
        changes.map((c) => c.prefix),
        ['10.70.0.0/26', '10.70.0.64/26'],
      );
    });

    it('a port already taken is an error event naming the address and port', async () => {
      const port = await freePort();
      blocker = createServer();
      await new Promise<void>((resolve) => blocker!.listen(port, '127.0.0.1', resolve));
      const errors: Error[] = [];
      bgp.on('error', (e) => errors.push(e));
      bgp.ensure({ asn: 64512, port, clusterId: undefined, routerId: '127.0.0.1' });
      await waitFor(() => errors.length, { what: 'listen error', until: (n) => n === 1 });
      assert.match(errors[0]!.message, new RegExp(`^BGP listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE`));
      assert.ok(
        logged.some(([e, f]) => e === 'listen-error' && f.port === port),
        `no listen-error logged for port ${port}: ${logged.map(([e]) => e).join(', ')}`,
      );
    });
  });
});
