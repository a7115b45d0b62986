// ConnectRetryCounter, automatic restart through the IdleHoldTimer, its exponential back-off
// (DampPeerOscillations), the jitter of RFC 4271 §10, and the purity of step().
import assert from 'node:assert/strict';
import { createFsm, step, type FsmState } from '../../../bgp/fsm/index.js';
import { describe as actionsOf, fresh, go, reach, running } from './helpers.js';

/** OpenSent → hold timer expires → Idle: one damped failure. */
function failOnce(s: FsmState): FsmState {
  const sent = go(s, s.state === 'Idle' && s.timers.IdleHoldTimer !== null ? 'IdleHoldTimer_Expires' : 'ManualStart', 'Tcp_CR_Acked');
  return step(sent, { type: 'HoldTimer_Expires' }, 0).state;
}

describe('FSM: ConnectRetryCounter and IdleHold back-off', () => {
  it('doubles IdleHoldTime on each damped failure, up to maxIdleHoldTime, counting each', () => {
    let s = fresh({ idleHoldTime: 5, maxIdleHoldTime: 30 });
    const waits: number[] = [];
    const counters: number[] = [];
    for (let i = 0; i < 6; i++) {
      s = failOnce(s);
      waits.push(s.timers.IdleHoldTimer ?? -1);
      counters.push(s.connectRetryCounter);
    }
    assert.deepEqual(waits, [5, 10, 20, 30, 30, 30]);
    assert.deepEqual(counters, [1, 2, 3, 4, 5, 6]);
  });

  it('without DampPeerOscillations the wait stays at IdleHoldTime', () => {
    let s = fresh({ dampPeerOscillations: false });
    for (let i = 0; i < 3; i++) s = failOnce(s);
    assert.equal(s.timers.IdleHoldTimer, 5);
    assert.equal(s.connectRetryCounter, 3);
  });

  it('IdleHoldTimer_Expires restarts the way the FSM was started, keeping the counter', () => {
    const active = failOnce(fresh());
    const r = step(active, { type: 'IdleHoldTimer_Expires' }, 0);
    assert.equal(r.state.state, 'Connect');
    assert.deepEqual(actionsOf(r.actions), ['startTimer:ConnectRetryTimer:120', 'connect']);
    assert.equal(r.state.connectRetryCounter, 1);

    const passive = go(fresh(), 'ManualStart_with_PassiveTcpEstablishment', 'TcpConnectionConfirmed', 'HoldTimer_Expires');
    const rp = step(passive, { type: 'IdleHoldTimer_Expires' }, 0);
    assert.equal(rp.state.state, 'Active');
    assert.deepEqual(actionsOf(rp.actions), ['startTimer:ConnectRetryTimer:120']);
  });

  it('a refused connection (Connect, TcpConnectionFails) retries after IdleHoldTime, neither counted nor damped', () => {
    let s = go(fresh(), 'ManualStart', 'TcpConnectionFails');
    s = go(s, 'IdleHoldTimer_Expires', 'TcpConnectionFails');
    assert.equal(s.state, 'Idle');
    assert.equal(s.timers.IdleHoldTimer, 5);
    assert.equal(s.connectRetryCounter, 0);
  });

  it('ManualStart forgets the counter and the back-off', () => {
    let s = failOnce(failOnce(fresh()));
    assert.equal(s.idleHoldTime, 20);
    s = go(s, 'ManualStop');
    const r = step(s, { type: 'ManualStart' }, 0);
    assert.equal(r.state.connectRetryCounter, 0);
    assert.equal(r.state.idleHoldTime, 5);
  });

  it('ManualStop during the hold-down cancels the restart', () => {
    const down = failOnce(fresh());
    const r = step(down, { type: 'ManualStop' }, 0);
    assert.equal(r.state.state, 'Idle');
    assert.deepEqual(actionsOf(r.actions), ['stopTimer:IdleHoldTimer']);
    assert.equal(r.state.restartAfterError, false);
    // A queued expiry that raced with the stop is stale.
    assert.deepEqual(step(r.state, { type: 'IdleHoldTimer_Expires' }, 0).actions, []);
  });

  it('AutomaticStop during the hold-down cancels it only when AllowAutomaticStop', () => {
    const stopped = step(failOnce(fresh()), { type: 'AutomaticStop', subcode: 1 }, 0);
    assert.equal(stopped.state.timers.IdleHoldTimer, null);
    const kept = step(failOnce(fresh({ allowAutomaticStop: false })), { type: 'AutomaticStop', subcode: 1 }, 0);
    assert.equal(kept.state.timers.IdleHoldTimer, 5);
    assert.deepEqual(kept.actions, []);
  });

  it('AllowAutomaticStop false: AutomaticStop is ignored in every state', () => {
    for (const name of ['Connect', 'Active', 'OpenSent', 'OpenConfirm', 'Established'] as const) {
      const s = reach(name, { allowAutomaticStop: false });
      const r = step(s, { type: 'AutomaticStop', subcode: 1 }, 0);
      assert.equal(r.state.state, name);
      assert.deepEqual(r.actions, []);
    }
  });

  it('AllowAutomaticStart false: no restart after an error, automatic starts ignored, manual start works', () => {
    const s = failOnce(fresh({ allowAutomaticStart: false }));
    assert.deepEqual(running(s), {});
    assert.ok(
      !s.restartAfterError || s.timers.IdleHoldTimer === null,
      `restartAfterError ${s.restartAfterError} with IdleHoldTimer ${s.timers.IdleHoldTimer}`,
    );
    for (const type of [
      'AutomaticStart',
      'AutomaticStart_with_PassiveTcpEstablishment',
      'AutomaticStart_with_DampPeerOscillations',
      'AutomaticStart_with_DampPeerOscillations_and_PassiveTcpEstablishment',
    ] as const) {
      assert.deepEqual(step(s, { type }, 0).actions, [], type);
    }
    assert.equal(step(s, { type: 'ManualStart' }, 0).state.state, 'Connect');
  });

  it('AutomaticStart (3) during the hold-down starts at once; with damping (6, 7) it waits for the IdleHoldTimer', () => {
    const down = failOnce(fresh());
    const now = step(down, { type: 'AutomaticStart' }, 0);
    assert.equal(now.state.state, 'Connect');
    assert.deepEqual(actionsOf(now.actions), ['stopTimer:IdleHoldTimer', 'startTimer:ConnectRetryTimer:120', 'connect']);

    const waits = step(down, { type: 'AutomaticStart_with_DampPeerOscillations_and_PassiveTcpEstablishment' }, 0);
    assert.equal(waits.state.state, 'Idle');
    assert.deepEqual(waits.actions, []);
    const later = step(waits.state, { type: 'IdleHoldTimer_Expires' }, 0);
    assert.equal(later.state.state, 'Active', 'the deferred start was passive');
  });

  it('events 6 and 7 turn damping on even when the config has it off', () => {
    let s = go(fresh({ dampPeerOscillations: false }), 'AutomaticStart_with_DampPeerOscillations', 'Tcp_CR_Acked', 'HoldTimer_Expires');
    assert.equal(s.dampPeerOscillations, true);
    assert.equal(s.idleHoldTime, 10);
    s = go(s, 'ManualStop', 'ManualStart');
    assert.equal(s.dampPeerOscillations, false, 'a manual start goes back to the configured value');
  });

  it('an OpenCollisionDump or a stop never restarts by itself', () => {
    for (const type of ['OpenCollisionDump', 'ManualStop'] as const) {
      const r = step(reach('OpenConfirm'), { type }, 0);
      assert.equal(r.state.timers.IdleHoldTimer, null, type);
      assert.equal(r.state.restartAfterError, false, type);
    }
  });

  it('a session Established for idleHoldForgetTime or longer forgets the back-off when it goes down', () => {
    const config = { idleHoldForgetTime: 300 };
    let s = failOnce(failOnce(fresh(config))); // back-off now 20
    s = go(s, 'IdleHoldTimer_Expires', 'Tcp_CR_Acked', 'BGPOpen');
    const up = step(s, { type: 'KeepAliveMsg' }, 1_000).state;
    assert.equal(up.establishedAt, 1_000);

    const shortLived = step(up, { type: 'TcpConnectionFails' }, 1_000 + 299_999).state;
    assert.equal(shortLived.timers.IdleHoldTimer, 20, 'still oscillating: keeps the grown wait');
    assert.equal(shortLived.idleHoldTime, 40);

    const stable = step(up, { type: 'TcpConnectionFails' }, 1_000 + 300_000).state;
    assert.equal(stable.timers.IdleHoldTimer, 5, 'stable: back to the initial wait');
    assert.equal(stable.idleHoldTime, 10);
  });
});

describe('FSM: jitter (RFC 4271 §10)', () => {
  function connectRetryTimes(seed: number, n: number): number[] {
    let s = createFsm({}, { seed });
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const r = step(s, { type: i === 0 ? 'ManualStart' : 'ConnectRetryTimer_Expires' }, 0);
      out.push(r.state.timers.ConnectRetryTimer ?? -1);
      s = r.state;
    }
    return out;
  }

  it('ConnectRetryTimer runs 0.75..1 of ConnectRetryTime, the same for the same seed', () => {
    const a = connectRetryTimes(42, 200);
    for (const v of a) assert.ok(v >= 90 && v <= 120, `${v} within [90, 120]`);
    assert.ok(Math.max(...a) - Math.min(...a) > 20, 'values spread over the range');
    assert.deepEqual(connectRetryTimes(42, 200), a);
    assert.notDeepEqual(connectRetryTimes(43, 200), a, 'another seed, other values');
  });

  it('keepalive and IdleHold timers are jittered; the hold timer is not', () => {
    const s = go(createFsm({ idleHoldTime: 8 }, { seed: 7 }), 'ManualStart', 'Tcp_CR_Acked', 'BGPOpen');
    assert.equal(s.timers.HoldTimer, 90);
    const ka = s.timers.KeepaliveTimer ?? -1;
    assert.ok(ka >= 22.5 && ka <= 30 && ka !== 30, `keepalive ${ka}`);
    const idle = go(s, 'HoldTimer_Expires').timers.IdleHoldTimer ?? -1;
    assert.ok(idle >= 6 && idle < 8, `idle hold ${idle}`);
  });

  it('jitter 0 gives exact values', () => {
    assert.equal(go(fresh(), 'ManualStart').timers.ConnectRetryTimer, 120);
  });
});

describe('FSM: step is pure', () => {
  function deepFreeze<T>(o: T): T {
    if (o !== null && typeof o === 'object' && !Object.isFrozen(o)) {
      Object.freeze(o);
      for (const v of Object.values(o)) deepFreeze(v);
    }
    return o;
  }

  it('never changes the state it is given, and gives the same answer twice', () => {
    const states = (['Idle', 'Connect', 'Active', 'OpenSent', 'OpenConfirm', 'Established'] as const).map((n) =>
      deepFreeze(reach(n, { jitter: 0.25, delayOpen: n === 'Active' })),
    );
    const events = [
      { type: 'ManualStart' },
      { type: 'Tcp_CR_Acked' },
      { type: 'HoldTimer_Expires' },
      { type: 'KeepaliveTimer_Expires' },
      { type: 'KeepAliveMsg' },
      { type: 'UpdateMsg' },
      { type: 'TcpConnectionFails' },
      { type: 'ManualStop', subcode: 2 },
    ] as const;
    for (const s of states) {
      const copy = structuredClone(s);
      for (const e of events) {
        const a = step(s, e, 5);
        const b = step(s, e, 5);
        assert.deepEqual(a, b);
      }
      assert.deepEqual(s, copy);
    }
  });
});
