// Whom a restarted speaker waits for before it sends (RFC 4724 §4.1, bgp/selection-deferral.ts):
// every graceful-restart peer's End-of-RIB in each family, every configured peer's session,
// until the timer; nothing at all when it did not restart.
import assert from 'node:assert/strict';
import type { AddressFamily, SessionInfo } from '../../bgp/index.js';
import { SelectionDeferral } from '../../bgp/selection-deferral.js';
import { sleep } from '../support/wait.js';

/** The parts of a session the deferral reads: the families and the peer's graceful restart capability. */
function session(families: AddressFamily[], gr?: { restarting: boolean; families?: AddressFamily[] }): SessionInfo {
  return {
    negotiated: { families },
    gracefulRestart: gr && {
      restartTime: 120,
      restarting: gr.restarting,
      families: (gr.families ?? families).map((family) => ({ family, forwardingPreserved: true })),
    },
  } as unknown as SessionInfo;
}

describe('selection deferral after a restart', () => {
  const made: SelectionDeferral[] = [];
  let done: number;
  const deferral = (restarting: boolean, ms = 60_000) => {
    const d = new SelectionDeferral(restarting, ms, () => done++);
    made.push(d);
    return d;
  };
  beforeEach(() => {
    done = 0;
  });
  afterEach(() => {
    for (const d of made.splice(0)) d.stop();
  });

  it('without a restart nothing is held back', () => {
    const d = deferral(false);
    assert.equal(d.deferring, false);
    d.expect('10.0.0.2');
    d.established('10.0.0.2', session(['ipv4-unicast'], { restarting: false }));
    assert.equal(d.deferring, false);
    assert.equal(done, 0);
  });

  it('waits for every configured peer, then each End-of-RIB of each family, then is done once', () => {
    const d = deferral(true);
    d.expect('10.0.0.2');
    d.expect('10.0.0.3');
    d.established('10.0.0.2', session(['ipv4-unicast', 'ipv6-unicast'], { restarting: false }));
    d.endOfRib('10.0.0.2', 'ipv4-unicast');
    d.endOfRib('10.0.0.2', 'ipv6-unicast');
    assert.deepEqual(d.waitingFor, ['10.0.0.3'], 'a configured peer not yet up may still bring routes');
    // One that set R too (FRR does at every start) is waited for as well.
    d.established('10.0.0.3', session(['ipv4-unicast'], { restarting: true }));
    assert.deepEqual(d.waitingFor, ['10.0.0.3|ipv4-unicast']);
    assert.equal(done, 0);
    d.endOfRib('10.0.0.3', 'ipv4-unicast');
    assert.equal(d.deferring, false);
    assert.equal(done, 1);
    d.endOfRib('10.0.0.3', 'ipv4-unicast');
    assert.equal(done, 1);
  });

  it('a peer without graceful restart, or a family outside its capability, owes nothing', () => {
    const d = deferral(true);
    d.expect('10.0.0.2');
    d.expect('10.0.0.3');
    d.established('10.0.0.2', session(['ipv4-unicast']));
    d.established('10.0.0.3', session(['ipv4-unicast', 'ipv6-unicast'], { restarting: false, families: ['ipv4-unicast'] }));
    assert.deepEqual(d.waitingFor, ['10.0.0.3|ipv4-unicast']);
    d.endOfRib('10.0.0.3', 'ipv4-unicast');
    assert.equal(done, 1);
  });

  it('a session lost before its End-of-RIB is waited for again; a removed peer is not', () => {
    const d = deferral(true);
    d.expect('10.0.0.2');
    d.expect('10.0.0.3');
    d.established('10.0.0.2', session(['ipv4-unicast'], { restarting: false }));
    d.down('10.0.0.2');
    assert.deepEqual(d.waitingFor.sort(), ['10.0.0.2', '10.0.0.3']);
    d.forget('10.0.0.3');
    d.forget('10.0.0.2');
    assert.equal(done, 1);
  });

  it('the timer, started by the first session, ends the wait', async () => {
    const d = deferral(true, 150);
    d.expect('10.0.0.2');
    d.expect('10.0.0.3');
    await sleep(250);
    assert.equal(done, 0, 'no session yet: no timer');
    d.established('10.0.0.2', session(['ipv4-unicast'], { restarting: false }));
    await sleep(300);
    assert.equal(done, 1);
    assert.equal(d.deferring, false);
  });
});
