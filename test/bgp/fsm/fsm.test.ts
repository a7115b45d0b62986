// Every event in every state of RFC 4271 §8.2.2, one row each. The tables are typed as
// Record<FsmEventType, ...>, so a missing event is a compile error, not a silent gap.
// Defaults: hold time 90, ConnectRetryTime 120, OpenSent hold 240, IdleHoldTime 5, no jitter.
import assert from 'node:assert/strict';
import { step, type FsmEventType } from '../../../bgp/fsm/index.js';
import { ALL_EVENTS, UNCHANGED, describe as actionsOf, reach, sample, type Expectation, type Reachable } from './helpers.js';

const IGNORED: Expectation = UNCHANGED;
const stale: Expectation = UNCHANGED; // a timer expiry for a timer this state does not run

const toIdle = (counter: number, ...actions: string[]): Expectation => ({ to: 'Idle', counter, actions });
const RESTART = 'startTimer:IdleHoldTimer:5';
const DOWN = ['releaseResources', 'dropTcp', 'sessionDown'];

const idle: Record<FsmEventType, Expectation> = {
  ManualStart: { to: 'Connect', counter: 0, actions: ['startTimer:ConnectRetryTimer:120', 'connect'] },
  ManualStop: IGNORED,
  AutomaticStart: { to: 'Connect', counter: 0, actions: ['startTimer:ConnectRetryTimer:120', 'connect'] },
  ManualStart_with_PassiveTcpEstablishment: { to: 'Active', counter: 0, actions: ['startTimer:ConnectRetryTimer:120'] },
  AutomaticStart_with_PassiveTcpEstablishment: { to: 'Active', counter: 0, actions: ['startTimer:ConnectRetryTimer:120'] },
  AutomaticStart_with_DampPeerOscillations: { to: 'Connect', counter: 0, actions: ['startTimer:ConnectRetryTimer:120', 'connect'] },
  AutomaticStart_with_DampPeerOscillations_and_PassiveTcpEstablishment: {
    to: 'Active',
    counter: 0,
    actions: ['startTimer:ConnectRetryTimer:120'],
  },
  AutomaticStop: IGNORED,
  ConnectRetryTimer_Expires: stale,
  HoldTimer_Expires: stale,
  KeepaliveTimer_Expires: stale,
  DelayOpenTimer_Expires: stale,
  IdleHoldTimer_Expires: stale,
  TcpConnection_Valid: IGNORED,
  Tcp_CR_Invalid: IGNORED,
  // Idle refuses connections: one that completes anyway is closed.
  Tcp_CR_Acked: { to: 'Idle', counter: 0, actions: ['dropTcp'] },
  TcpConnectionConfirmed: { to: 'Idle', counter: 0, actions: ['dropTcp'] },
  TcpConnectionFails: IGNORED,
  BGPOpen: IGNORED,
  BGPHeaderErr: IGNORED,
  BGPOpenMsgErr: IGNORED,
  OpenCollisionDump: IGNORED,
  NotifMsgVerErr: IGNORED,
  NotifMsg: IGNORED,
  KeepAliveMsg: IGNORED,
  UpdateMsg: IGNORED,
  UpdateMsgErr: IGNORED,
};

// Connect and Active share most rows: no OPEN sent yet, so no NOTIFICATION on errors.
const CRT_DOWN = ['stopTimer:ConnectRetryTimer', ...DOWN];
function preOpen(self: 'Connect' | 'Active'): Record<FsmEventType, Expectation> {
  return {
    ManualStart: IGNORED,
    ManualStop: toIdle(0, ...CRT_DOWN),
    AutomaticStart: IGNORED,
    ManualStart_with_PassiveTcpEstablishment: IGNORED,
    AutomaticStart_with_PassiveTcpEstablishment: IGNORED,
    AutomaticStart_with_DampPeerOscillations: IGNORED,
    AutomaticStart_with_DampPeerOscillations_and_PassiveTcpEstablishment: IGNORED,
    // Counted and damped, but an automatic stop does not restart itself.
    AutomaticStop: toIdle(1, ...CRT_DOWN),
    ConnectRetryTimer_Expires:
      self === 'Connect'
        ? { to: 'Connect', counter: 0, actions: ['dropTcp', 'startTimer:ConnectRetryTimer:120', 'connect'] }
        : // reached by a passive start: it keeps waiting for the peer (see active-mode test below)
          { to: 'Active', counter: 0, actions: ['startTimer:ConnectRetryTimer:120'] },
    HoldTimer_Expires: stale,
    KeepaliveTimer_Expires: stale,
    DelayOpenTimer_Expires: stale,
    IdleHoldTimer_Expires: stale,
    TcpConnection_Valid: IGNORED,
    Tcp_CR_Invalid: IGNORED,
    Tcp_CR_Acked: { to: 'OpenSent', counter: 0, actions: ['stopTimer:ConnectRetryTimer', 'sendOpen:90', 'startTimer:HoldTimer:240'] },
    TcpConnectionConfirmed: {
      to: 'OpenSent',
      counter: 0,
      actions: ['stopTimer:ConnectRetryTimer', 'sendOpen:90', 'startTimer:HoldTimer:240'],
    },
    // Connect: a failed attempt is not counted; Active: counted and damped.
    TcpConnectionFails: toIdle(self === 'Connect' ? 0 : 1, ...CRT_DOWN, RESTART),
    BGPOpen: toIdle(1, ...CRT_DOWN, RESTART),
    BGPHeaderErr: toIdle(1, ...CRT_DOWN, RESTART),
    BGPOpenMsgErr: toIdle(1, ...CRT_DOWN, RESTART),
    OpenCollisionDump: toIdle(1, ...CRT_DOWN),
    NotifMsgVerErr: toIdle(1, ...CRT_DOWN, RESTART),
    NotifMsg: toIdle(1, ...CRT_DOWN, RESTART),
    KeepAliveMsg: toIdle(1, ...CRT_DOWN, RESTART),
    UpdateMsg: toIdle(1, ...CRT_DOWN, RESTART),
    UpdateMsgErr: toIdle(1, ...CRT_DOWN, RESTART),
  };
}

const HOLD_DOWN = ['stopTimer:HoldTimer', ...DOWN];
const openSent: Record<FsmEventType, Expectation> = {
  ManualStart: IGNORED,
  ManualStop: toIdle(0, 'sendNotification:6/2', ...HOLD_DOWN),
  AutomaticStart: IGNORED,
  ManualStart_with_PassiveTcpEstablishment: IGNORED,
  AutomaticStart_with_PassiveTcpEstablishment: IGNORED,
  AutomaticStart_with_DampPeerOscillations: IGNORED,
  AutomaticStart_with_DampPeerOscillations_and_PassiveTcpEstablishment: IGNORED,
  AutomaticStop: toIdle(1, 'sendNotification:6/1', ...HOLD_DOWN),
  ConnectRetryTimer_Expires: stale,
  HoldTimer_Expires: toIdle(1, 'sendNotification:4/0', ...DOWN, RESTART),
  KeepaliveTimer_Expires: stale,
  DelayOpenTimer_Expires: stale,
  IdleHoldTimer_Expires: stale,
  TcpConnection_Valid: IGNORED,
  Tcp_CR_Invalid: IGNORED,
  Tcp_CR_Acked: IGNORED,
  TcpConnectionConfirmed: IGNORED,
  TcpConnectionFails: {
    to: 'Active',
    counter: 0,
    actions: ['dropTcp', 'stopTimer:HoldTimer', 'startTimer:ConnectRetryTimer:120'],
  },
  BGPOpen: { to: 'OpenConfirm', counter: 0, actions: ['sendKeepalive', 'startTimer:KeepaliveTimer:30', 'startTimer:HoldTimer:90'] },
  BGPHeaderErr: toIdle(1, 'sendNotification:1/2', ...HOLD_DOWN, RESTART),
  BGPOpenMsgErr: toIdle(1, 'sendNotification:2/2', ...HOLD_DOWN, RESTART),
  OpenCollisionDump: toIdle(1, 'sendNotification:6/7', ...HOLD_DOWN),
  NotifMsgVerErr: toIdle(0, ...HOLD_DOWN, RESTART),
  // The RFC's FSM Error reply to a NOTIFICATION would reach a closing socket; none is sent.
  NotifMsg: toIdle(1, ...HOLD_DOWN, RESTART),
  KeepAliveMsg: toIdle(1, 'sendNotification:5/1', ...HOLD_DOWN, RESTART),
  UpdateMsg: toIdle(1, 'sendNotification:5/1', ...HOLD_DOWN, RESTART),
  UpdateMsgErr: toIdle(1, 'sendNotification:5/1', ...HOLD_DOWN, RESTART),
};

const BOTH_DOWN = ['stopTimer:HoldTimer', 'stopTimer:KeepaliveTimer', ...DOWN];
const openConfirm: Record<FsmEventType, Expectation> = {
  ManualStart: IGNORED,
  ManualStop: toIdle(0, 'sendNotification:6/2', ...BOTH_DOWN),
  AutomaticStart: IGNORED,
  ManualStart_with_PassiveTcpEstablishment: IGNORED,
  AutomaticStart_with_PassiveTcpEstablishment: IGNORED,
  AutomaticStart_with_DampPeerOscillations: IGNORED,
  AutomaticStart_with_DampPeerOscillations_and_PassiveTcpEstablishment: IGNORED,
  AutomaticStop: toIdle(1, 'sendNotification:6/1', ...BOTH_DOWN),
  ConnectRetryTimer_Expires: stale,
  HoldTimer_Expires: toIdle(1, 'sendNotification:4/0', 'stopTimer:KeepaliveTimer', ...DOWN, RESTART),
  KeepaliveTimer_Expires: { to: 'OpenConfirm', counter: 0, actions: ['sendKeepalive', 'startTimer:KeepaliveTimer:30'] },
  DelayOpenTimer_Expires: stale,
  IdleHoldTimer_Expires: stale,
  TcpConnection_Valid: IGNORED,
  Tcp_CR_Invalid: IGNORED,
  Tcp_CR_Acked: IGNORED,
  TcpConnectionConfirmed: IGNORED,
  TcpConnectionFails: toIdle(1, ...BOTH_DOWN, RESTART),
  // A second OPEN on this connection (collisions arrive on the other connection's FSM).
  BGPOpen: toIdle(1, 'sendNotification:5/2', ...BOTH_DOWN, RESTART),
  BGPHeaderErr: toIdle(1, 'sendNotification:1/2', ...BOTH_DOWN, RESTART),
  BGPOpenMsgErr: toIdle(1, 'sendNotification:2/2', ...BOTH_DOWN, RESTART),
  OpenCollisionDump: toIdle(1, 'sendNotification:6/7', ...BOTH_DOWN),
  NotifMsgVerErr: toIdle(0, ...BOTH_DOWN, RESTART),
  NotifMsg: toIdle(1, ...BOTH_DOWN, RESTART),
  KeepAliveMsg: { to: 'Established', counter: 0, actions: ['startTimer:HoldTimer:90', 'established'] },
  UpdateMsg: toIdle(1, 'sendNotification:5/2', ...BOTH_DOWN, RESTART),
  UpdateMsgErr: toIdle(1, 'sendNotification:5/2', ...BOTH_DOWN, RESTART),
};

const ROUTES_DOWN = ['stopTimer:HoldTimer', 'stopTimer:KeepaliveTimer', 'deleteRoutes', ...DOWN];
const established: Record<FsmEventType, Expectation> = {
  ManualStart: IGNORED,
  ManualStop: toIdle(0, 'sendNotification:6/2', ...ROUTES_DOWN),
  AutomaticStart: IGNORED,
  ManualStart_with_PassiveTcpEstablishment: IGNORED,
  AutomaticStart_with_PassiveTcpEstablishment: IGNORED,
  AutomaticStart_with_DampPeerOscillations: IGNORED,
  AutomaticStart_with_DampPeerOscillations_and_PassiveTcpEstablishment: IGNORED,
  AutomaticStop: toIdle(1, 'sendNotification:6/1', ...ROUTES_DOWN),
  ConnectRetryTimer_Expires: stale,
  HoldTimer_Expires: toIdle(1, 'sendNotification:4/0', 'stopTimer:KeepaliveTimer', 'deleteRoutes', ...DOWN, RESTART),
  KeepaliveTimer_Expires: { to: 'Established', counter: 0, actions: ['sendKeepalive', 'startTimer:KeepaliveTimer:30'] },
  DelayOpenTimer_Expires: stale,
  IdleHoldTimer_Expires: stale,
  TcpConnection_Valid: IGNORED,
  Tcp_CR_Invalid: IGNORED,
  Tcp_CR_Acked: IGNORED,
  TcpConnectionConfirmed: IGNORED,
  TcpConnectionFails: toIdle(1, ...ROUTES_DOWN, RESTART),
  BGPOpen: toIdle(1, 'sendNotification:5/3', ...ROUTES_DOWN, RESTART),
  // §6.1: a bad header gets its Message Header Error.
  BGPHeaderErr: toIdle(1, 'sendNotification:1/2', ...ROUTES_DOWN, RESTART),
  BGPOpenMsgErr: toIdle(1, 'sendNotification:5/3', ...ROUTES_DOWN, RESTART),
  // Ignored unless CollisionDetectEstablishedState (tested in collision.test.ts).
  OpenCollisionDump: IGNORED,
  NotifMsgVerErr: toIdle(1, ...ROUTES_DOWN, RESTART),
  NotifMsg: toIdle(1, ...ROUTES_DOWN, RESTART),
  KeepAliveMsg: { to: 'Established', counter: 0, actions: ['startTimer:HoldTimer:90'] },
  UpdateMsg: { to: 'Established', counter: 0, actions: ['processUpdate', 'startTimer:HoldTimer:90'] },
  UpdateMsgErr: toIdle(1, 'sendNotification:3/1', ...ROUTES_DOWN, RESTART),
};

const TABLES: ReadonlyArray<[Reachable, Record<FsmEventType, Expectation>]> = [
  ['Idle', idle],
  ['Connect', preOpen('Connect')],
  ['Active', preOpen('Active')],
  ['OpenSent', openSent],
  ['OpenConfirm', openConfirm],
  ['Established', established],
];

describe('FSM: every event in every state (RFC 4271 §8.2.2)', () => {
  for (const [stateName, table] of TABLES) {
    describe(stateName, () => {
      it('has a row for each of the 27 event inputs', () => {
        assert.deepEqual(Object.keys(table).sort(), [...ALL_EVENTS].sort());
      });
      for (const eventType of ALL_EVENTS) {
        const expected = table[eventType];
        const label = expected === UNCHANGED ? 'no change' : `→ ${expected.to}: ${expected.actions.join(', ') || '(nothing)'}`;
        it(`${eventType} ${label}`, () => {
          const before = reach(stateName);
          const r = step(before, sample(eventType), 1_000);
          if (expected === UNCHANGED) {
            assert.deepEqual(r.actions, []);
            assert.deepEqual(r.state, before);
            return;
          }
          assert.equal(r.state.state, expected.to);
          assert.deepEqual(actionsOf(r.actions), expected.actions);
          if (expected.counter !== undefined) assert.equal(r.state.connectRetryCounter, expected.counter);
          // The timer table always agrees with what the actions left running.
          if (expected.to === 'Idle') {
            const running = Object.entries(r.state.timers)
              .filter(([, v]) => v !== null)
              .map(([k]) => k);
            assert.deepEqual(running, expected.actions.includes(RESTART) ? ['IdleHoldTimer'] : []);
            assert.equal(r.state.peer, null);
          }
        });
      }
    });
  }
});
