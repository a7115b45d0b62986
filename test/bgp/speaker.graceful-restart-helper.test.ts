// Our speaker as the helper (RFC 4724 §4.2) of a `podroute bgpd` that is killed with SIGKILL and
// started again: its routes are kept as stale while it is away; when it comes back saying it
// kept its forwarding state (F=1) they wait for its End-of-RIB, and when it says it did not
// (F=0) they go at once, before that End-of-RIB (held back here by a configured peer that never
// comes up, until the restarted daemon's selectDeferTime).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BgpSpeaker } from '../../bgp/index.js';
import { sleep, waitFor } from '../support/wait.js';

const BIN = fileURLToPath(new URL('../../bin/podroute.js', import.meta.url));
let nextPort = 40000 + (process.pid % 5000) * 4;
const H = '127.0.9.11'; // our speaker, the helper
const D = '127.0.9.12'; // podroute bgpd, the one that restarts
const PREFIX = '10.5.0.0/24';

describe('speaker as graceful restart helper: the F bit of the restarted peer', function () {
  this.timeout(60_000);
  let dir: string;
  let helper: BgpSpeaker | undefined;
  let daemon: ChildProcess | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'podroute-gr-helper-'));
  });
  afterEach(async () => {
    daemon?.kill('SIGKILL');
    await helper?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  function startDaemon(file: string): ChildProcess {
    const child = spawn(process.execPath, [BIN, 'bgpd', '--config', file], { stdio: 'ignore' });
    return child;
  }

  async function run(forwardingPreserved: boolean) {
    const ph = nextPort++;
    const pd = nextPort++;
    helper = new BgpSpeaker({ asn: 65001, routerId: H, listen: { host: H, port: ph }, stalePathTime: 60 });
    await helper.start();
    let ups = 0;
    helper.on('peerUp', () => ups++);
    helper.addPeer({ address: D, asn: 65002, port: pd, localAddress: H, holdTime: 9, connectRetryTime: 1, idleHoldTime: 0.2 });
    const file = join(dir, 'bgpd.json');
    writeFileSync(
      file,
      JSON.stringify({
        asn: 65002,
        routerId: D,
        listen: { host: D, port: pd },
        gracefulRestart: { forwardingPreserved, selectDeferTime: 6, stateDir: dir },
        peers: [
          { address: H, asn: 65001, port: ph, localAddress: D, holdTime: 9, connectRetryTime: 1, idleHoldTime: 1 },
          { address: '127.0.9.13', asn: 65003, passive: true },
        ],
        networks: [PREFIX],
      }),
    );
    const h = helper;
    const route = () => h.lookup(PREFIX)?.best;
    daemon = startDaemon(file);
    await waitFor(route, { what: `${PREFIX} from bgpd`, until: (r) => r !== undefined && !r.stale, timeoutMs: 20_000 });
    daemon.kill('SIGKILL');
    await waitFor(route, { what: `${PREFIX} kept as stale`, until: (r) => r?.stale === true, timeoutMs: 10_000 });
    daemon = startDaemon(file);
    await waitFor(() => ups, { what: 'the session back', until: (n) => n >= 2, timeoutMs: 20_000 });
    const up = performance.now();
    return { route, up };
  }

  it('F=0: the stale routes go as the session comes back, before the End-of-RIB', async () => {
    const { route, up } = await run(false);
    await waitFor(route, { what: `${PREFIX} swept`, until: (r) => r === undefined, timeoutMs: 2000, intervalMs: 20 });
    assert.ok(performance.now() - up < 3000, 'well before the restarted side ended its 6 s deferral');
    // Then its table comes, with its End-of-RIB.
    await waitFor(route, { what: `${PREFIX} back`, until: (r) => r !== undefined && !r.stale, timeoutMs: 15_000 });
  });

  it('F=1: they stay, stale, until the End-of-RIB, and are then fresh', async () => {
    const { route } = await run(true);
    await sleep(2000);
    assert.equal(route()?.stale, true, 'kept while the restarted side defers');
    await waitFor(route, { what: `${PREFIX} fresh`, until: (r) => r !== undefined && !r.stale, timeoutMs: 15_000 });
  });
});
