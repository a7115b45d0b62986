// RFC 4271 §8.2.2 rows that the usual paths cannot reach (a timer expiring in a state that
// never runs it: only a hand-made state can show them), passive and active FSMs in Active,
// what sessionDown reports, and the event numbering.
import assert from 'node:assert/strict';
import { FSM_EVENT_NUMBER, notificationEvent, step, timerExpiresEvent } from '../../../bgp/fsm/index.js';
import { ALL_EVENTS, describe as actionsOf, fresh, go, reach, sample, withTimers } from './helpers.js';

describe('FSM: "any other event" rows for timers that run where the RFC does not start them', () => {
  const rows = [
    ['Connect', 'HoldTimer', 'HoldTimer_Expires', null],
    ['Connect', 'KeepaliveTimer', 'KeepaliveTimer_Expires', null],
    ['Connect', 'IdleHoldTimer', 'IdleHoldTimer_Expires', null],
    ['Active', 'HoldTimer', 'HoldTimer_Expires', null],
    ['Active', 'IdleHoldTimer', 'IdleHoldTimer_Expires', null],
    ['OpenSent', 'ConnectRetryTimer', 'ConnectRetryTimer_Expires', '5/1'],
    ['OpenSent', 'KeepaliveTimer', 'KeepaliveTimer_Expires', '5/1'],
    ['OpenSent', 'DelayOpenTimer', 'DelayOpenTimer_Expires', '5/1'],
    ['OpenSent', 'IdleHoldTimer', 'IdleHoldTimer_Expires', '5/1'],
    ['OpenConfirm', 'ConnectRetryTimer', 'ConnectRetryTimer_Expires', '5/2'],
    ['OpenConfirm', 'DelayOpenTimer', 'DelayOpenTimer_Expires', '5/2'],
    ['OpenConfirm', 'IdleHoldTimer', 'IdleHoldTimer_Expires', '5/2'],
    ['Established', 'ConnectRetryTimer', 'ConnectRetryTimer_Expires', '5/3'],
    ['Established', 'DelayOpenTimer', 'DelayOpenTimer_Expires', '5/3'],
    ['Established', 'IdleHoldTimer', 'IdleHoldTimer_Expires', '5/3'],
  ] as const;
  for (const [state, timer, event, fsmError] of rows) {
    it(`${state}: ${event} → Idle${fsmError ? ` with FSM Error ${fsmError}` : ''}, counted`, () => {
      const s = withTimers(reach(state), { [timer]: 1 });
      const r = step(s, { type: event }, 0);
      assert.equal(r.state.state, 'Idle');
      assert.equal(r.state.connectRetryCounter, 1);
      const sent = actionsOf(r.actions).filter((a) => a.startsWith('sendNotification'));
      assert.deepEqual(sent, fsmError ? [`sendNotification:${fsmError}`] : []);
      assert.ok(!actionsOf(r.actions).includes(`stopTimer:${timer}`), 'the expired timer is not stopped again');
      assert.equal(r.state.idleHoldTime, 10, 'damped');
    });
  }

  it('a stale expiry returns the very same state object', () => {
    const s = reach('Established');
    assert.equal(step(s, { type: 'ConnectRetryTimer_Expires' }, 0).state, s);
  });
});

describe('FSM: Active state, active and passive', () => {
  it('an active FSM back in Active (OpenSent lost its TCP) reconnects when the ConnectRetryTimer fires', () => {
    const s = go(fresh(), 'ManualStart', 'Tcp_CR_Acked', 'TcpConnectionFails');
    assert.equal(s.state, 'Active');
    const r = step(s, { type: 'ConnectRetryTimer_Expires' }, 0);
    assert.equal(r.state.state, 'Connect');
    assert.deepEqual(actionsOf(r.actions), ['startTimer:ConnectRetryTimer:120', 'connect']);
  });

  it('a passive FSM never emits connect, whatever happens', () => {
    let s = go(fresh(), 'ManualStart_with_PassiveTcpEstablishment');
    const seen: string[] = [];
    for (const type of [
      'ConnectRetryTimer_Expires',
      'TcpConnectionConfirmed',
      'TcpConnectionFails',
      'ConnectRetryTimer_Expires',
      'TcpConnectionFails',
      'IdleHoldTimer_Expires',
      'ConnectRetryTimer_Expires',
    ] as const) {
      const r = step(s, sample(type), 0);
      seen.push(...actionsOf(r.actions));
      s = r.state;
    }
    assert.ok(!seen.includes('connect'), seen.join(' '));
    assert.equal(s.state, 'Active');
  });
});

describe('FSM: what sessionDown and Cease carry', () => {
  it('ManualStop passes its Cease subcode and data (e.g. RFC 9003 shutdown communication)', () => {
    const data = Uint8Array.of(5, 0x62, 0x79, 0x65, 0x21, 0x21);
    const r = step(reach('Established'), { type: 'ManualStop', subcode: 2, data }, 0);
    assert.deepEqual(r.actions[0], { type: 'sendNotification', notification: { code: 6, subcode: 2, data } });
    const down = r.actions.find((a) => a.type === 'sessionDown');
    assert.deepEqual(down, {
      type: 'sessionDown',
      wasEstablished: true,
      reason: { event: 'ManualStop', from: 'Established', sent: { code: 6, subcode: 2, data } },
    });
  });

  it('ManualStop without a subcode sends 6/2 Administrative Shutdown; hard reset 6/9 when asked', () => {
    assert.equal(actionsOf(step(reach('OpenConfirm'), { type: 'ManualStop' }, 0).actions)[0], 'sendNotification:6/2');
    assert.equal(actionsOf(step(reach('Established'), { type: 'ManualStop', subcode: 9 }, 0).actions)[0], 'sendNotification:6/9');
  });

  it("a peer's NOTIFICATION is reported as received", () => {
    const r = step(reach('Established'), { type: 'NotifMsg', notification: { code: 6, subcode: 3 } }, 0);
    const down = r.actions.find((a) => a.type === 'sessionDown');
    assert.deepEqual(down, {
      type: 'sessionDown',
      wasEstablished: true,
      reason: { event: 'NotifMsg', from: 'Established', received: { code: 6, subcode: 3 } },
    });
  });
});

describe('FSM events', () => {
  it('are numbered 1..28 as RFC 4271 §8.1 (20 is BGPOpen with the DelayOpenTimer running)', () => {
    const numbers = ALL_EVENTS.map((e) => FSM_EVENT_NUMBER[e]);
    assert.deepEqual(numbers, [...Array.from({ length: 19 }, (_, i) => i + 1), 21, 22, 23, 24, 25, 26, 27, 28]);
  });
  it('notificationEvent tells a version error (2/1) from any other NOTIFICATION', () => {
    assert.equal(notificationEvent({ code: 2, subcode: 1 }).type, 'NotifMsgVerErr');
    assert.equal(notificationEvent({ code: 2, subcode: 2 }).type, 'NotifMsg');
    assert.equal(notificationEvent({ code: 6, subcode: 1 }).type, 'NotifMsg');
  });
  it('timerExpiresEvent names the event of each timer', () => {
    assert.deepEqual(timerExpiresEvent('DelayOpenTimer'), { type: 'DelayOpenTimer_Expires' });
    assert.deepEqual(timerExpiresEvent('IdleHoldTimer'), { type: 'IdleHoldTimer_Expires' });
  });
});
