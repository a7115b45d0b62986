// DelayOpen (RFC 4271 §8.1.1 group 4): on TCP success wait DelayOpenTime for the peer's OPEN
// before sending ours, in both Connect and Active; and SendNOTIFICATIONwithoutOPEN.
import assert from 'node:assert/strict';
import { step } from '../../../bgp/fsm/index.js';
import { PEER_OPEN, describe as actionsOf, fresh, go, running, sample } from './helpers.js';

const DELAY = { delayOpen: true, delayOpenTime: 5 };

for (const [name, startEvent, tcpEvent] of [
  ['Connect', 'ManualStart', 'Tcp_CR_Acked'],
  ['Active', 'ManualStart_with_PassiveTcpEstablishment', 'TcpConnectionConfirmed'],
] as const) {
  describe(`FSM: DelayOpen in ${name}`, () => {
    const delaying = (config = {}) => go(fresh({ ...DELAY, ...config }), startEvent, tcpEvent);

    it('TCP success stops the ConnectRetryTimer, starts the DelayOpenTimer and stays', () => {
      const r = step(go(fresh(DELAY), startEvent), sample(tcpEvent), 0);
      assert.equal(r.state.state, name);
      assert.deepEqual(actionsOf(r.actions), ['stopTimer:ConnectRetryTimer', 'startTimer:DelayOpenTimer:5']);
      assert.deepEqual(running(r.state), { DelayOpenTimer: 5 });
    });

    it('DelayOpenTimer_Expires sends OPEN, sets the large hold timer, goes to OpenSent', () => {
      const r = step(delaying(), { type: 'DelayOpenTimer_Expires' }, 0);
      assert.equal(r.state.state, 'OpenSent');
      assert.deepEqual(actionsOf(r.actions), ['sendOpen:90', 'startTimer:HoldTimer:240']);
      assert.deepEqual(running(r.state), { HoldTimer: 240 });
    });

    it('an OPEN while delaying (event 20) sends OPEN and KEEPALIVE and goes to OpenConfirm', () => {
      const r = step(delaying(), { type: 'BGPOpen', open: { ...PEER_OPEN, holdTime: 30 } }, 0);
      assert.equal(r.state.state, 'OpenConfirm');
      assert.deepEqual(actionsOf(r.actions), [
        'stopTimer:DelayOpenTimer',
        'sendOpen:90',
        'sendKeepalive',
        'startTimer:KeepaliveTimer:10',
        'startTimer:HoldTimer:30',
      ]);
      assert.equal(r.state.negotiatedHoldTime, 30);
      assert.deepEqual(r.state.peer, { ...PEER_OPEN, holdTime: 30 });
    });

    it('an OPEN with hold time 0 while delaying runs neither keepalive nor hold timer', () => {
      const r = step(delaying(), { type: 'BGPOpen', open: { ...PEER_OPEN, holdTime: 0 } }, 0);
      assert.equal(r.state.state, 'OpenConfirm');
      assert.deepEqual(actionsOf(r.actions), ['stopTimer:DelayOpenTimer', 'sendOpen:90', 'sendKeepalive']);
      assert.deepEqual(running(r.state), {});
    });

    it('an OPEN with hold time 2 while delaying goes to Idle; 2/6 only with SendNOTIFICATIONwithoutOPEN', () => {
      const bad = { type: 'BGPOpen', open: { ...PEER_OPEN, holdTime: 2 } } as const;
      const quiet = step(delaying(), bad, 0);
      assert.equal(quiet.state.state, 'Idle');
      assert.equal(quiet.state.connectRetryCounter, 1);
      assert.ok(
        !actionsOf(quiet.actions).some((a) => a.startsWith('sendNotification')),
        `a NOTIFICATION sent without SendNOTIFICATIONwithoutOPEN: ${actionsOf(quiet.actions).join(', ')}`,
      );
      const loud = step(delaying({ sendNotificationWithoutOpen: true }), bad, 0);
      assert.equal(actionsOf(loud.actions)[0], 'sendNotification:2/6');
      assert.ok(!actionsOf(loud.actions).includes('sendOpen:90'), 'no OPEN goes out for a refused OPEN');
    });

    it('NotifMsgVerErr while delaying goes to Idle without counting or damping', () => {
      const r = step(delaying(), sample('NotifMsgVerErr'), 0);
      assert.equal(r.state.state, 'Idle');
      assert.equal(r.state.connectRetryCounter, 0);
      assert.equal(r.state.idleHoldTime, 5, 'back-off not grown');
    });

    it('ManualStop while delaying sends Cease only with SendNOTIFICATIONwithoutOPEN', () => {
      const quiet = step(delaying(), { type: 'ManualStop' }, 0);
      assert.deepEqual(actionsOf(quiet.actions), ['stopTimer:DelayOpenTimer', 'releaseResources', 'dropTcp', 'sessionDown']);
      const loud = step(delaying({ sendNotificationWithoutOpen: true }), { type: 'ManualStop', subcode: 4 }, 0);
      assert.deepEqual(actionsOf(loud.actions), [
        'sendNotification:6/4',
        'stopTimer:DelayOpenTimer',
        'releaseResources',
        'dropTcp',
        'sessionDown',
      ]);
    });

    it('BGPHeaderErr while delaying sends its NOTIFICATION only with SendNOTIFICATIONwithoutOPEN', () => {
      const quiet = step(delaying(), sample('BGPHeaderErr'), 0);
      assert.ok(
        !actionsOf(quiet.actions).some((a) => a.startsWith('sendNotification')),
        `a NOTIFICATION sent without SendNOTIFICATIONwithoutOPEN: ${actionsOf(quiet.actions).join(', ')}`,
      );
      const loud = step(delaying({ sendNotificationWithoutOpen: true }), sample('BGPHeaderErr'), 0);
      assert.equal(actionsOf(loud.actions)[0], 'sendNotification:1/2');
      assert.equal(loud.state.connectRetryCounter, 1);
    });
  });
}

describe('FSM: DelayOpen, state-specific', () => {
  it('Connect: TcpConnectionFails while delaying goes to Active and restarts the ConnectRetryTimer', () => {
    const s = go(fresh(DELAY), 'ManualStart', 'Tcp_CR_Acked');
    const r = step(s, { type: 'TcpConnectionFails' }, 0);
    assert.equal(r.state.state, 'Active');
    assert.deepEqual(actionsOf(r.actions), ['stopTimer:DelayOpenTimer', 'dropTcp', 'startTimer:ConnectRetryTimer:120']);
    assert.equal(r.state.connectRetryCounter, 0);
  });

  it('Active: TcpConnectionFails while delaying goes to Idle, counted', () => {
    const s = go(fresh(DELAY), 'ManualStart_with_PassiveTcpEstablishment', 'TcpConnectionConfirmed');
    const r = step(s, { type: 'TcpConnectionFails' }, 0);
    assert.equal(r.state.state, 'Idle');
    assert.equal(r.state.connectRetryCounter, 1);
    assert.deepEqual(actionsOf(r.actions), [
      'stopTimer:DelayOpenTimer',
      'releaseResources',
      'dropTcp',
      'sessionDown',
      'startTimer:IdleHoldTimer:5',
    ]);
  });

  it('Connect: ConnectRetryTimer_Expires stops a running DelayOpenTimer and reconnects', () => {
    // The ConnectRetryTimer is stopped while delaying; mark it running to exercise the RFC row.
    const s = go(fresh(DELAY), 'ManualStart', 'Tcp_CR_Acked');
    const r = step({ ...s, timers: { ...s.timers, ConnectRetryTimer: 120 } }, { type: 'ConnectRetryTimer_Expires' }, 0);
    assert.equal(r.state.state, 'Connect');
    assert.deepEqual(actionsOf(r.actions), ['dropTcp', 'stopTimer:DelayOpenTimer', 'startTimer:ConnectRetryTimer:120', 'connect']);
  });

  it('OpenSent: an OPEN stops a DelayOpenTimer that still runs ("resets the DelayOpenTimer")', () => {
    const s = go(fresh(), 'ManualStart', 'Tcp_CR_Acked');
    const r = step({ ...s, timers: { ...s.timers, DelayOpenTimer: 5 } }, sample('BGPOpen'), 0);
    assert.equal(r.state.state, 'OpenConfirm');
    assert.equal(actionsOf(r.actions)[0], 'stopTimer:DelayOpenTimer');
  });
});
