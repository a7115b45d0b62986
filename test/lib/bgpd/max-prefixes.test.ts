// `maxPrefixes` in the daemons: bgpd's and the reflector's files and the control socket's
// add-peer body take it through one check that names the path; status shows it, and the
// control socket clears a hold-down.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BgpSpeaker, type PeerStatus } from '../../../bgp/index.js';
import { formatPeers } from '../../../lib/cli/bgpd.js';
import { parseBgpdConfig } from '../../../lib/bgpd/config.js';
import { callControl, serveControl } from '../../../lib/bgpd/control.js';
import { parseReflectorConfig } from '../../../lib/bgpd/reflector-config.js';

const base = (peer: Record<string, unknown>) =>
  JSON.stringify({ asn: 65001, routerId: '10.0.0.1', peers: [{ address: '10.0.0.2', asn: 65002, ...peer }] });

describe('bgpd maxPrefixes', () => {
  it('reads a limit per family, by either name of the family', () => {
    const c = parseBgpdConfig(
      base({
        maxPrefixes: { ipv4: { limit: 1000, warningThreshold: 90, restartAfter: 60 }, 'ipv6-unicast': { limit: 10, warningOnly: true } },
      }),
    );
    assert.deepEqual(JSON.parse(JSON.stringify(c.peers[0]!.maxPrefixes)), {
      'ipv4-unicast': { limit: 1000, warningThreshold: 90, restartAfter: 60 },
      'ipv6-unicast': { limit: 10, warningOnly: true },
    });
  });

  it('refuses a bad limit with its path, in bgpd and reflector files', () => {
    const bad: [unknown, string][] = [
      [5, 'peers[0].maxPrefixes: a mapping of family'],
      [{ ipv5: { limit: 1 } }, 'peers[0].maxPrefixes.ipv5: unknown family "ipv5"'],
      [{ ipv4: 100 }, 'peers[0].maxPrefixes.ipv4: a mapping'],
      [{ ipv4: {} }, 'peers[0].maxPrefixes.ipv4.limit: undefined is not a number'],
      [{ ipv4: { limit: 1.5 } }, 'peers[0].maxPrefixes.ipv4.limit: 1.5 is not a whole number'],
      [{ ipv4: { limit: '100' } }, 'peers[0].maxPrefixes.ipv4.limit: "100" is a string, not a number'],
      [{ ipv4: { limit: 10, warningThreshold: 0 } }, 'peers[0].maxPrefixes.ipv4.warningThreshold: 0 is not a number in 1..100'],
      [{ ipv4: { limit: 10, restartAfter: -5 } }, 'peers[0].maxPrefixes.ipv4.restartAfter: -5'],
      [{ ipv4: { limit: 10, warningOnly: 1 } }, 'peers[0].maxPrefixes.ipv4.warningOnly: 1 is not true or false'],
      [{ ipv4: { limit: 10, warningOnly: true, restartAfter: 5 } }, 'peers[0].maxPrefixes.ipv4.restartAfter: a warningOnly limit'],
      [{ ipv4: { limit: 10, threshold: 5 } }, 'peers[0].maxPrefixes.ipv4.threshold: unknown field'],
      [{ ipv4: { limit: 10 }, 'ipv4-unicast': { limit: 5 } }, 'peers[0].maxPrefixes.ipv4-unicast: ipv4-unicast is given twice'],
    ];
    for (const [v, message] of bad) {
      assert.throws(
        () => parseBgpdConfig(base({ maxPrefixes: v })),
        (e: Error) => e.message.startsWith(message),
        `${JSON.stringify(v)} should fail with ${message}`,
      );
    }
    assert.throws(
      () =>
        parseReflectorConfig(
          JSON.stringify({ asn: 65001, routerId: '10.0.0.1', clients: [{ address: '10.0.0.2', maxPrefixes: { ipv4: { limit: 0 } } }] }),
        ),
      /^ConfigError: clients\[0\]\.maxPrefixes\.ipv4\.limit: 0 is not a number in 1\.\.4294967295/,
    );
    const r = parseReflectorConfig(
      JSON.stringify({ asn: 65001, routerId: '10.0.0.1', clientRanges: [{ range: '10.0.0.0/24', maxPrefixes: { ipv4: { limit: 50 } } }] }),
    );
    assert.equal(r.dynamicNeighbors[0]!.maxPrefixes?.['ipv4-unicast']?.limit, 50);
  });

  it('maxRoutes, the speaker-wide guard: read in both files, refused with its path', () => {
    const doc = (maxRoutes: unknown) => JSON.stringify({ asn: 65001, routerId: '10.0.0.1', maxRoutes });
    assert.deepEqual(parseBgpdConfig(doc({ limit: 500000, restartAfter: 120 })).speaker.maxRoutes, { limit: 500000, restartAfter: 120 });
    assert.deepEqual(parseReflectorConfig(doc({ limit: 10 })).speaker.maxRoutes, { limit: 10 });
    assert.equal(parseBgpdConfig(doc(undefined)).speaker.maxRoutes, undefined);
    assert.throws(() => parseBgpdConfig(doc(1000)), /^ConfigError: maxRoutes: a mapping \{ limit, restartAfter \}/);
    assert.throws(() => parseBgpdConfig(doc({ limit: 0 })), /^ConfigError: maxRoutes\.limit: 0 is not a number in 1\.\.4294967295/);
    assert.throws(
      () => parseBgpdConfig(doc({ limit: 10, restartAfter: 1.5 })),
      /^ConfigError: maxRoutes\.restartAfter: 1\.5 is not a whole number/,
    );
    assert.throws(() => parseBgpdConfig(doc({ limit: 10, max: 1 })), /^ConfigError: maxRoutes\.max: unknown field/);
  });

  describe('over the control socket', () => {
    let dir: string;
    let socket: string;
    let speaker: BgpSpeaker;
    let server: http.Server;

    beforeEach(async () => {
      dir = mkdtempSync(join(tmpdir(), 'podroute-maxprefix-'));
      socket = join(dir, 'bgpd.sock');
      speaker = new BgpSpeaker({ asn: 64512, routerId: '10.0.0.1', listen: false });
      server = await serveControl(speaker, socket, () => {});
    });

    afterEach(async () => {
      await new Promise((resolve) => server.close(resolve));
      await speaker.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('add-peer takes maxPrefixes through the same check; status shows the limit; clear answers for a peer not held', async () => {
      await assert.rejects(
        callControl(socket, 'POST', '/peers', { address: '10.0.0.3', asn: 65003, passive: true, maxPrefixes: { ipv4: { limit: -1 } } }),
        /^Error: maxPrefixes\.ipv4\.limit: -1 is not a number/,
      );
      assert.equal(speaker.peerStatus().length, 0, 'nothing added');
      await callControl(socket, 'POST', '/peers', { address: '10.0.0.3', asn: 65003, passive: true, maxPrefixes: { ipv6: { limit: 20 } } });
      const s = await callControl<{ peers: PeerStatus[] }>(socket, 'GET', '/status');
      assert.deepEqual(s.peers[0]!.maxPrefixes, {
        limits: [{ family: 'ipv6-unicast', limit: 20, warningThreshold: 75, restartAfter: 0, warningOnly: false, warned: false }],
      });
      assert.match(formatPeers(s.peers), /max prefixes ipv6 20$/m);
      assert.deepEqual(await callControl(socket, 'POST', '/peers/clear-max-prefix', { address: '10.0.0.3' }), { cleared: false });
      await assert.rejects(
        callControl(socket, 'POST', '/peers/clear-max-prefix', { address: '10.0.0.9' }),
        /peer 10\.0\.0\.9: not configured/,
      );
      await assert.rejects(callControl(socket, 'POST', '/peers/clear-max-prefix', { peer: '10.0.0.3' }), /peer: unknown field/);
    });
  });

  it('status text shows a hold-down and how long it lasts', () => {
    const p = {
      address: '10.0.0.2',
      asn: 65002,
      type: 'ebgp',
      state: 'Idle',
      since: Date.now(),
      families: [],
      prefixesReceived: 0,
      prefixesSent: 0,
      messagesIn: 0,
      messagesOut: 0,
      outputBuffered: 0,
      lastError: 'maximum prefixes exceeded: 11 ipv4-unicast paths, limit 10; session down for 30 s',
      dynamic: false,
      maxPrefixes: {
        limits: [{ family: 'ipv4-unicast', limit: 10, warningThreshold: 75, restartAfter: 30, warningOnly: false, warned: false }],
        heldDown: { family: 'ipv4-unicast', message: '', restartAt: Date.now() + 29_500 },
      },
    } satisfies PeerStatus;
    assert.match(formatPeers([p]), /limit 10; session down for 30 s; max prefixes ipv4 10, held down 30 s more$/m);
    const cleared = { ...p, maxPrefixes: { ...p.maxPrefixes, heldDown: { family: 'ipv4-unicast' as const, message: '' } } };
    assert.match(formatPeers([cleared]), /held down until cleared$/m);
  });
});
