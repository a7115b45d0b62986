// Unit tests of the harness's pure parts: waitFor's failure message, TCP reassembly from
// out-of-order, retransmitted and missing segments, config renderers refusing what a daemon
// cannot do, and BIRD's text parsers.
import assert from 'node:assert/strict';
import { parseBirdRoutes, renderBirdConfig } from './bird.js';
import { renderFrrConfig } from './frr.js';
import { renderGobgpConfig } from './gobgp.js';
import { reassembleTcp, type TcpSegment } from './pcap.js';
import { nodeRunArgv } from './node-agents.js';
import { waitFor, WaitTimeoutError } from './wait.js';

describe('harness units', () => {
  describe('waitFor', () => {
    it('returns the first accepted value', async () => {
      let n = 0;
      assert.equal(await waitFor(() => ++n, { what: 'n to reach 3', until: (v) => v >= 3, intervalMs: 1 }), 3);
    });

    it('fails naming what it waited for and the last value seen', async () => {
      await assert.rejects(
        waitFor(() => ({ state: 'Active' }), {
          what: 'session Established',
          until: (v) => v.state === 'Established',
          timeoutMs: 50,
          intervalMs: 10,
        }),
        (error: unknown) =>
          error instanceof WaitTimeoutError && /waiting for session Established; last value: \{"state":"Active"\}/.test(error.message),
      );
    });

    it('reports the last error of a probe that keeps throwing', async () => {
      await assert.rejects(
        waitFor(
          () => {
            throw new Error('no socket yet');
          },
          { what: 'a socket', timeoutMs: 30, intervalMs: 10 },
        ),
        /waiting for a socket; probe threw: no socket yet/,
      );
    });
  });

  describe('TCP reassembly', () => {
    const seg = (from: 'c' | 's', seq: number, payload: string, flags: Partial<TcpSegment['flags']> = {}): TcpSegment => ({
      timeUs: 0,
      src: from === 'c' ? '10.0.0.1' : '10.0.0.2',
      dst: from === 'c' ? '10.0.0.2' : '10.0.0.1',
      srcPort: from === 'c' ? 40000 : 179,
      dstPort: from === 'c' ? 179 : 40000,
      seq: seq >>> 0,
      ack: 0,
      flags: { syn: false, ack: true, fin: false, rst: false, ...flags },
      payload: Buffer.from(payload),
    });

    it('orders segments, folds retransmits and overlaps, and wraps the sequence space', () => {
      const isn = 0xfffffffd; // data starts at 0xfffffffe: the stream wraps past 2^32
      const [connection] = reassembleTcp([
        seg('c', isn, '', { syn: true, ack: false }),
        seg('s', 1000, '', { syn: true }),
        seg('c', isn + 3, 'cdef'), // arrives before 'ab'
        seg('c', isn + 1, 'ab'),
        seg('c', isn + 1, 'ab'), // retransmit
        seg('c', isn + 4, 'defgh'), // overlaps
        seg('s', 1001, 'xyz', { fin: true }),
      ]);
      assert.ok(connection, 'no connection reassembled');
      assert.equal(connection.client.port, 40000);
      assert.equal(connection.clientToServer.bytes.toString(), 'abcdefgh');
      assert.equal(connection.clientToServer.retransmits, 2);
      assert.deepEqual(connection.clientToServer.gaps, []);
      assert.equal(connection.serverToClient.bytes.toString(), 'xyz');
      assert.equal(connection.serverToClient.closed, 'fin');
    });

    it('reports a hole instead of hiding it', () => {
      const [connection] = reassembleTcp([seg('c', 100, '', { syn: true, ack: false }), seg('c', 101, 'ab'), seg('c', 105, 'ef')]);
      assert.deepEqual(connection!.clientToServer.gaps, [{ offset: 2, length: 2 }]);
    });

    it('starts a new connection on a new SYN for the same ports', () => {
      const connections = reassembleTcp([
        seg('c', 100, '', { syn: true, ack: false }),
        seg('c', 101, 'one', { rst: true }),
        seg('c', 5000, '', { syn: true, ack: false }),
        seg('c', 5001, 'two'),
      ]);
      assert.deepEqual(
        connections.map((c) => c.clientToServer.bytes.toString()),
        ['one', 'two'],
      );
    });
  });

  describe('config renderers', () => {
    const base = { routerId: '10.0.0.1', asn: 65001 };

    it('FRR: a 2-octet-only peer sends no capabilities, so it cannot carry IPv6', () => {
      const text = renderFrrConfig({ ...base, peers: [{ address: '10.0.0.2', remoteAs: 65002, fourOctetAs: false }] });
      assert.match(text, /neighbor 10\.0\.0\.2 dont-capability-negotiate/);
      assert.throws(
        () =>
          renderFrrConfig({ ...base, peers: [{ address: '10.0.0.2', remoteAs: 65002, fourOctetAs: false, families: ['ipv4', 'ipv6'] }] }),
        /frr: fourOctetAs=false .*families/,
      );
    });

    it('FRR: fast timers and add-path per family', () => {
      const text = renderFrrConfig({ ...base, peers: [{ address: '10.0.0.2', remoteAs: 65002, families: ['ipv6'], addPath: 'send' }] });
      assert.match(text, /neighbor 10\.0\.0\.2 timers 3 9\n/);
      assert.match(text, /neighbor 10\.0\.0\.2 timers connect 2\n/);
      assert.match(
        text,
        /address-family ipv6 unicast\n {2}neighbor 10\.0\.0\.2 activate\n {2}neighbor 10\.0\.0\.2 addpath-tx-all-paths\n {2}neighbor 10\.0\.0\.2 disable-addpath-rx/,
      );
    });

    it('BIRD: ipv6 on an IPv4 session needs nextHopV6, and says so', () => {
      assert.throws(
        () => renderBirdConfig({ ...base, peers: [{ address: '10.0.0.2', remoteAs: 65002, families: ['ipv6'] }] }),
        /bird: nextHopV6/,
      );
      const text = renderBirdConfig({
        ...base,
        nextHopV6: 'fd00::1',
        peers: [{ address: '10.0.0.2', remoteAs: 65002, families: ['ipv6'] }],
      });
      assert.match(text, /error wait time 1,2;/);
      assert.match(text, /ipv6 \{ import all; export all; next hop address fd00::1; \};/);
    });

    it('GoBGP: refuses extended messages, which 3.10 does not have', () => {
      assert.throws(
        () => renderGobgpConfig({ ...base, peers: [{ address: '10.0.0.2', remoteAs: 65002, extendedMessage: true }] }),
        /gobgp: extendedMessage/,
      );
    });
  });

  describe('BIRD route parser', () => {
    it('reads every path of a prefix with its BGP attributes', () => {
      const text = [
        'Table master4:',
        '10.201.0.0/24        unicast [peer0 10:34:19.429] * (100) [AS65001i]',
        '\tvia 10.99.0.1 on eth0',
        '\tType: BGP univ',
        '\tBGP.origin: IGP',
        '\tBGP.as_path: 65001',
        '\tBGP.next_hop: 10.99.0.1',
        '\tBGP.med: 5',
        '\tBGP.local_pref: 100',
        '\tBGP.community: (65001,7) (65001,8)',
        '\tBGP.large_community: (65001, 1, 2)',
        '                     unicast [peer1 10:34:19.429 from 10.99.0.9] (100) [AS65001i]',
        '\tvia 10.99.0.3 on eth0',
        '\tType: BGP univ',
        '\tBGP.origin: Incomplete',
        '\tBGP.as_path: 65003 {65001 65004}',
        '\tBGP.next_hop: 10.99.0.3',
        '',
      ].join('\n');
      const [first, second] = parseBirdRoutes(text);
      assert.deepEqual(
        { ...first, attributes: undefined },
        {
          prefix: '10.201.0.0/24',
          nextHops: ['10.99.0.1'],
          asPath: [65001],
          origin: 'igp',
          med: 5,
          localPref: 100,
          communities: ['65001:7', '65001:8'],
          largeCommunities: ['65001:1:2'],
          best: true,
          protocol: 'peer0',
          kind: 'unicast',
          preference: 100,
          stale: false,
          attributes: undefined,
        },
      );
      assert.equal(second!.prefix, '10.201.0.0/24');
      assert.equal(second!.best, false);
      assert.equal(second!.from, '10.99.0.9');
      assert.equal(second!.origin, 'incomplete');
      assert.deepEqual(second!.asPath, [65003, 65001, 65004]);
    });

    it('reads a stale route, whose preference BIRD prints as (100s)', () => {
      const [r] = parseBirdRoutes('10.241.0.0/24        unicast [peer0 12:13:44.237] * (100s) [AS65000i]\n\tBGP.community: (65535,6)\n');
      assert.equal(r?.stale, true);
      assert.equal(r?.preference, 100);
      assert.deepEqual(r?.communities, ['65535:6']);
    });
  });

  describe('nodeRunArgv', () => {
    it("a lab node's agent: its addresses and sockets, the lab's defaults, then the caller's flags (the later flag wins)", () => {
      const argv = nodeRunArgv({
        name: 'n1',
        ip: '10.0.0.1/24',
        ip6: 'fd00::1/64',
        datastore: '/tmp/r.sock',
        control: '/tmp/n1.sock',
        node: ['node', '--import', 'x.mjs'],
        flags: ['--health-port', '9099'],
      });
      assert.deepEqual(argv.slice(0, 3), ['node', '--import', 'x.mjs'], 'the Node.js command first');
      assert.match(argv[3] ?? '', /bin\/podroute\.js$/, 'then podroute');
      const flag = (f: string) => argv[argv.lastIndexOf(f) + 1];
      assert.equal(flag('--ip6'), 'fd00::1/64', '--ip6 given');
      assert.equal(flag('--cni-socket'), 'off', 'no CNI socket unless asked');
      assert.equal(flag('--health-port'), '9099', "the caller's flag comes last and wins");
      assert.ok(!argv.includes('--router-id'), 'no router ID unless asked');
    });
  });
});
