// Our side of graceful restart: a restart is seen from the routes of ours left in the
// dataplane, and felix's first resync waits for every peer's End-of-RIB, or for the deadline.
import assert from 'node:assert/strict';
import { MemoryDataplane, PODROUTE_PROTOCOL } from '../../../felix/index.js';
import { detectRestart, GracefulRestart } from '../../../lib/agent/graceful-restart.js';
import { waitFor } from '../../support/wait.js';

describe('agent graceful restart', () => {
  it("a restart is routes of our protocol already in the dataplane; other programs' routes do not count", async () => {
    const dp = new MemoryDataplane({ links: ['eth0'] });
    assert.equal(await detectRestart(dp, PODROUTE_PROTOCOL), false);
    dp.inject({ dst: '10.0.0.0/24', type: 'unicast', nextHops: [{ dev: 'eth0' }], protocol: 2, table: 254, metric: 0 });
    assert.equal(await detectRestart(dp, PODROUTE_PROTOCOL), false);
    dp.inject({
      dst: '10.70.0.64/26',
      type: 'unicast',
      nextHops: [{ gateway: '10.0.0.2', dev: 'eth0' }],
      protocol: PODROUTE_PROTOCOL,
      table: 254,
      metric: 1024,
    });
    assert.equal(await detectRestart(dp, PODROUTE_PROTOCOL), true);
    assert.equal(await detectRestart(dp, 99), false);
  });

  describe('the first resync', () => {
    let gates: GracefulRestart[];
    let peers: string[];
    let released: number;
    let logged: [string, Record<string, unknown>][];
    const gate = (restarting: boolean, waitMs = 60_000) => {
      const g = new GracefulRestart({
        restarting,
        waitMs,
        peers: () => peers,
        release: () => released++,
        log: (e, f) => logged.push([e, f]),
      });
      gates.push(g);
      return g;
    };
    beforeEach(() => {
      gates = [];
      peers = ['10.0.0.2', '10.0.0.3'];
      released = 0;
      logged = [];
    });
    afterEach(() => {
      for (const g of gates) g.stop();
    });

    it('goes at once, and once only, when we did not restart', () => {
      const g = gate(false);
      g.check();
      g.check();
      assert.equal(released, 1);
    });

    it('after a restart waits for the End-of-RIB of every peer, also of a peer added meanwhile', () => {
      const g = gate(true);
      g.check();
      assert.equal(released, 0);
      g.markEndOfRib('10.0.0.2');
      peers.push('10.0.0.4');
      g.check();
      assert.deepEqual(g.waitingFor(), ['10.0.0.3', '10.0.0.4']);
      g.markEndOfRib('10.0.0.3');
      g.markEndOfRib('10.0.0.4');
      assert.equal(released, 0, 'End-of-RIB alone does not release: the caller checks');
      g.check();
      assert.equal(released, 1);
      assert.deepEqual(logged, []);
    });

    it('after a restart goes at the deadline, naming the peers still awaited', async () => {
      const g = gate(true, 50);
      g.check();
      g.markEndOfRib('10.0.0.2');
      g.check();
      await waitFor(() => released, { what: 'released at the deadline', until: (n) => n === 1, timeoutMs: 5_000, intervalMs: 10 });
      assert.deepEqual(logged, [['graceful-restart-timeout', { waitingFor: ['10.0.0.3'] }]]);
      g.markEndOfRib('10.0.0.3');
      g.check();
      assert.equal(released, 1);
    });

    it('stopped, it never releases', async () => {
      const g = gate(true, 20);
      g.check();
      g.stop();
      await new Promise((r) => setTimeout(r, 60)); // past the deadline: nothing may happen
      peers = [];
      g.check();
      assert.equal(released, 0);
    });
  });
});
