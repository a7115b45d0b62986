// Hold time negotiation (RFC 4271 §4.2, §6.2, §10) through the FSM and its helpers, and the
// configuration checks that keep an unusable hold time out of our own OPEN.
import assert from 'node:assert/strict';
import { createFsm, fsmConfig, isAcceptableHoldTime, keepaliveTimeFor, negotiateHoldTime, step } from '../../../bgp/fsm/index.js';
import { PEER_OPEN, describe as actionsOf, go, fresh, reach, running } from './helpers.js';

function openWith(localHold: number, peerHold: number, keepaliveTime: number | null = null) {
  const sent = go(fresh({ holdTime: localHold, keepaliveTime }), 'ManualStart', 'Tcp_CR_Acked');
  return step(sent, { type: 'BGPOpen', open: { ...PEER_OPEN, holdTime: peerHold } }, 0);
}

describe('FSM: hold time negotiation', () => {
  const cases: ReadonlyArray<[local: number, peer: number, hold: number, keepalive: number]> = [
    [90, 0, 0, 0],
    [90, 3, 3, 1],
    [90, 4, 4, 1],
    [90, 5, 5, 1],
    [90, 6, 6, 2],
    [90, 180, 90, 30],
    [90, 65535, 90, 30],
    [0, 90, 0, 0],
    [3, 65535, 3, 1],
    [65535, 65535, 65535, 21845],
  ];
  for (const [local, peer, hold, keepalive] of cases) {
    it(`local ${local}, peer ${peer} → hold ${hold}, keepalive ${keepalive}`, () => {
      const r = openWith(local, peer);
      assert.equal(r.state.state, 'OpenConfirm');
      assert.equal(r.state.negotiatedHoldTime, hold);
      assert.equal(r.state.negotiatedKeepaliveTime, keepalive);
      if (hold === 0) {
        // No keepalives and no hold timer; the OpenSent "large" hold timer is stopped too.
        assert.deepEqual(actionsOf(r.actions), ['sendKeepalive', 'stopTimer:HoldTimer']);
        assert.deepEqual(running(r.state), {});
      } else {
        assert.deepEqual(actionsOf(r.actions), ['sendKeepalive', `startTimer:KeepaliveTimer:${keepalive}`, `startTimer:HoldTimer:${hold}`]);
        assert.deepEqual(running(r.state), { HoldTimer: hold, KeepaliveTimer: keepalive });
      }
    });
  }

  for (const peer of [1, 2]) {
    it(`a peer hold time of ${peer} is refused with 2/6 Unacceptable Hold Time`, () => {
      const r = openWith(90, peer);
      assert.equal(r.state.state, 'Idle');
      assert.deepEqual(actionsOf(r.actions), [
        'sendNotification:2/6',
        'stopTimer:HoldTimer',
        'releaseResources',
        'dropTcp',
        'sessionDown',
        'startTimer:IdleHoldTimer:5',
      ]);
      assert.equal(r.state.connectRetryCounter, 1);
    });
  }

  it('a configured keepalive below hold/3 wins; one above it is capped at hold/3', () => {
    assert.equal(openWith(90, 90, 10).state.negotiatedKeepaliveTime, 10);
    assert.equal(openWith(90, 90, 60).state.negotiatedKeepaliveTime, 30);
    assert.equal(openWith(90, 9, 10).state.negotiatedKeepaliveTime, 3);
  });

  it('the OPEN we send offers the configured hold time, even 0', () => {
    const r = step(go(fresh({ holdTime: 0 }), 'ManualStart'), { type: 'Tcp_CR_Acked' }, 0);
    assert.ok(actionsOf(r.actions).includes('sendOpen:0'), `no sendOpen:0 in ${actionsOf(r.actions).join(', ')}`);
    assert.deepEqual(running(r.state), { HoldTimer: 240 }, 'the large OpenSent hold timer runs regardless');
  });

  it('with hold time 0, Established sends no keepalives and runs no hold timer', () => {
    const est = go(fresh({ holdTime: 0 }), 'ManualStart', 'Tcp_CR_Acked', 'BGPOpen', 'KeepAliveMsg');
    assert.equal(est.state, 'Established');
    assert.deepEqual(running(est), {});
    assert.deepEqual(step(est, { type: 'KeepAliveMsg' }, 0).actions, []);
    assert.deepEqual(actionsOf(step(est, { type: 'UpdateMsg' }, 0).actions), ['processUpdate']);
    // Timer expiries cannot happen: no timer runs, so they are stale and ignored.
    assert.deepEqual(step(est, { type: 'HoldTimer_Expires' }, 0).state, est);
  });

  it('the established action reports the negotiated values', () => {
    const r = step(reach('OpenConfirm'), { type: 'KeepAliveMsg' }, 0);
    assert.deepEqual(r.actions[1], { type: 'established', peer: PEER_OPEN, holdTime: 90, keepaliveTime: 30 });
  });
});

describe('hold time helpers', () => {
  it('isAcceptableHoldTime: 0 and 3..65535 only', () => {
    assert.deepEqual([0, 1, 2, 3, 65535, 65536, -1, 2.5].map(isAcceptableHoldTime), [true, false, false, true, true, false, false, false]);
  });
  it('negotiateHoldTime takes the smaller offer', () => {
    assert.equal(negotiateHoldTime(90, 180), 90);
    assert.equal(negotiateHoldTime(90, 0), 0);
    assert.equal(negotiateHoldTime(3, 65535), 3);
  });
  it('keepaliveTimeFor: a third, rounded down, or the smaller configured value', () => {
    assert.equal(keepaliveTimeFor(0, null), 0);
    assert.equal(keepaliveTimeFor(0, 10), 0);
    assert.equal(keepaliveTimeFor(3, null), 1);
    assert.equal(keepaliveTimeFor(100, null), 33);
    assert.equal(keepaliveTimeFor(100, 20), 20);
  });
});

describe('FSM config validation', () => {
  it('accepts hold time 0, 3 and 65535', () => {
    for (const holdTime of [0, 3, 65535]) assert.equal(fsmConfig({ holdTime }).holdTime, holdTime);
  });
  for (const holdTime of [1, 2, 65536, -3, 2.5, Number.NaN]) {
    it(`refuses hold time ${holdTime}, naming the field`, () => {
      assert.throws(() => createFsm({ holdTime }), /holdTime/);
    });
  }
  it('refuses other bad values with the field name', () => {
    assert.throws(() => fsmConfig({ keepaliveTime: 0 }), /keepaliveTime/);
    assert.throws(() => fsmConfig({ connectRetryTime: 0 }), /connectRetryTime/);
    assert.throws(() => fsmConfig({ jitter: 1 }), /jitter/);
    assert.throws(() => fsmConfig({ jitter: -0.1 }), /jitter/);
    assert.throws(() => fsmConfig({ idleHoldTime: 10, maxIdleHoldTime: 5 }), /maxIdleHoldTime/);
    assert.throws(() => fsmConfig({ delayOpen: 'yes' as unknown as boolean }), /delayOpen/);
  });
  it('fills defaults from RFC 4271 §10', () => {
    const c = fsmConfig();
    assert.equal(c.holdTime, 90);
    assert.equal(c.connectRetryTime, 120);
    assert.equal(c.largeHoldTime, 240);
    assert.equal(c.jitter, 0.25);
  });
});
