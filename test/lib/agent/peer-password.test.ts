// BGPPeer `password` in the agent: a plain one or Calico's secretKeyRef, read from a mounted
// secret's directory or the environment, becomes the session's TCP-MD5 key. A secret that is not
// there leaves the peer unstarted, logged and shown in the status with the reason; a rotated
// one rebuilds the session. Checked against a real speaker keyed on the other end, so a wrong or
// missing key is a session that does not come up.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BgpSpeaker, loadTcpMd5, setTcpMd5AddonPath } from '../../../bgp/index.js';
import { resolvePassword, secretEnvName } from '../../../lib/agent/peer-password.js';
import { desiredPeers, type ClusterView, type DesiredPeer } from '../../../lib/agent/peers.js';
import { SessionReconciler, type SessionSettings } from '../../../lib/agent/sessions.js';
import { peerStatusRows } from '../../../lib/agent/status.js';
import { waitFor } from '../../support/wait.js';
import { freePort } from '../../../bgp/session/free-port.js';

const ref = { secretKeyRef: { name: 'bgp-secrets', key: 'tor' } };

describe('agent: BGPPeer password', function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'podroute-secrets-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const secret = (value: string) => {
    mkdirSync(join(dir, 'bgp-secrets'), { recursive: true });
    writeFileSync(join(dir, 'bgp-secrets', 'tor'), value);
  };

  it('a desired peer carries the BGPPeer`s password as written (text or reference)', () => {
    const view = {
      self: { metadata: { name: 'n1' }, spec: { bgp: { ipv4Address: '10.0.0.1/24' } } },
      nodes: [],
      config: undefined,
      bgpPeers: [
        { metadata: { name: 'tor' }, spec: { peerIP: '10.0.0.254', asNumber: 65000, password: ref } },
        { metadata: { name: 'plain' }, spec: { peerIP: '10.0.0.253', asNumber: 65000, password: 'text' } },
      ],
    } as unknown as ClusterView;
    const byAddress = new Map(desiredPeers(view).map((p) => [p.address, p.password]));
    assert.deepEqual(byAddress.get('10.0.0.254'), ref);
    assert.equal(byAddress.get('10.0.0.253'), 'text');
  });

  it('secretKeyRef: the mounted file first (one trailing newline dropped), then PODROUTE_SECRET_<NAME>_<KEY>', () => {
    assert.equal(secretEnvName('bgp-secrets', 'rack.1'), 'PODROUTE_SECRET_BGP_SECRETS_RACK_1');
    const env = { PODROUTE_SECRET_BGP_SECRETS_TOR: 'from-env' };
    assert.equal(resolvePassword(ref, { dir, env }), 'from-env', 'no file: the environment');
    assert.equal(resolvePassword(ref, { env }), 'from-env', 'no directory: the environment');
    secret('from-file\n');
    assert.equal(resolvePassword(ref, { dir, env }), 'from-file');
    assert.equal(resolvePassword('plain', { env: {} }), 'plain');
  });

  it('secretKeyRef not found, empty, too long or naming a path: an error that says where it looked, never the value', () => {
    assert.throws(
      () => resolvePassword(ref, { dir, env: {} }),
      new RegExp(
        `^Error: password secretKeyRef bgp-secrets/tor: not found \\(no file ${dir}/bgp-secrets/tor, no PODROUTE_SECRET_BGP_SECRETS_TOR in the environment\\)$`,
      ),
    );
    assert.throws(() => resolvePassword(ref, { env: {} }), /PODROUTE_SECRETS_DIR not set, no PODROUTE_SECRET_BGP_SECRETS_TOR/);
    assert.throws(() => resolvePassword({ secretKeyRef: { name: '..', key: 'passwd' } }, { dir, env: {} }), /not a secret name and key/);
    assert.throws(() => resolvePassword({ secretKeyRef: { name: 'a/b', key: 'c' } }, { dir, env: {} }), /not a secret name and key/);
    secret('\n');
    assert.throws(() => resolvePassword(ref, { dir, env: {} }), /the password is empty/);
    secret('s'.repeat(81));
    assert.throws(
      () => resolvePassword(ref, { dir, env: {} }),
      (e: Error) => /81 octets \(TCP-MD5 keys are at most 80\)/.test(e.message) && !e.message.includes('sss'),
    );
  });

  describe('with real speakers (the other end keyed)', () => {
    let port: number;
    let a: BgpSpeaker;
    let b: BgpSpeaker;
    let logged: [string, Record<string, unknown>][];
    let sessions: SessionReconciler;
    const tor: DesiredPeer = {
      address: '127.0.31.2',
      asn: 65000,
      type: 'global',
      source: 'BGPPeer/tor',
      routeReflectorClient: false,
      password: ref,
    };
    const settings = (): SessionSettings => ({
      port,
      localAddress: '127.0.31.1',
      holdTime: 9,
      connectRetryTime: 1,
      secrets: { dir, env: {} },
    });
    const state = () => a.peerStatus().find((p) => p.address === tor.address)?.state;

    before(() => {
      if (!loadTcpMd5()) throw new Error('the TCP-MD5 addon is not built: npm run build:native');
    });
    beforeEach(async () => {
      port = await freePort();
      logged = [];
      a = new BgpSpeaker({ asn: 64512, routerId: '127.0.31.1', listen: { host: '127.0.31.1', port } });
      b = new BgpSpeaker({ asn: 65000, routerId: '127.0.31.2', listen: { host: '127.0.31.2', port } });
      await Promise.all([a.start(), b.start()]);
      b.addPeer({ address: '127.0.31.1', asn: 64512, port, localAddress: '127.0.31.2', password: 'rack-secret', connectRetryTime: 1 });
      sessions = new SessionReconciler(a, (e, f) => logged.push([e, f]));
    });
    afterEach(async () => {
      await Promise.all([a.stop(), b.stop()]);
    });

    it('a missing secret: the peer is not started, the log and the status say why; once it appears the session comes up', async () => {
      sessions.reconcile([tor], settings());
      assert.deepEqual(a.peerStatus(), [], 'no session without its password');
      const err = logged.find(([e]) => e === 'peer-error');
      assert.equal(err?.[1].source, 'BGPPeer/tor');
      assert.match(String(err?.[1].error), /password secretKeyRef bgp-secrets\/tor: not found/);
      const rows = peerStatusRows(sessions.peers.values(), a.peerStatus(), sessions.refused);
      assert.equal(rows.length, 1);
      assert.equal(rows[0]!.state, 'Idle');
      assert.match(rows[0]!.info, /^Idle not started: password secretKeyRef bgp-secrets\/tor: not found/);

      secret('rack-secret\n');
      sessions.reconcile([tor], settings());
      assert.equal(sessions.refused.size, 0);
      await waitFor(state, { what: 'the keyed session Established', until: (s) => s === 'Established', timeoutMs: 15_000 });
    });

    it('without the TCP-MD5 addon: the peer is not started, and the status says so', () => {
      setTcpMd5AddonPath(join(dir, 'no-such-addon.node'));
      try {
        sessions.reconcile([{ ...tor, password: 'plain' }], settings());
      } finally {
        setTcpMd5AddonPath(undefined);
      }
      assert.deepEqual(a.peerStatus(), []);
      const row = peerStatusRows(sessions.peers.values(), a.peerStatus(), sessions.refused)[0]!;
      assert.match(row.info, /^Idle not started: peer 127\.0\.31\.2 password: the TCP-MD5 addon is not available at .*no-such-addon\.node/);
    });

    it('a wrong secret keeps the session down; the rotated one rebuilds it and it comes up', async () => {
      secret('not-the-rack-secret');
      sessions.reconcile([tor], settings());
      assert.deepEqual([...sessions.peers.keys()], [tor.address]);
      const end = Date.now() + 3000;
      while (Date.now() < end) {
        assert.ok(['Idle', 'Connect', 'Active'].includes(state() ?? 'Idle'), `state ${state()} with the wrong key`);
        await new Promise((r) => setTimeout(r, 100));
      }
      logged = [];
      sessions.reconcile([tor], settings());
      assert.equal(logged.length, 0, 'an unchanged secret touches nothing');
      secret('rack-secret');
      sessions.reconcile([tor], settings());
      assert.deepEqual(
        logged.map(([e]) => e),
        ['peer-removed', 'peer-added'],
      );
      await waitFor(state, { what: 'the session Established on the rotated key', until: (s) => s === 'Established', timeoutMs: 15_000 });
    });
  });
});
