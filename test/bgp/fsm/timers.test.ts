// The timer driver: FsmTimers over an injected clock (ManualClock here, Node's timers in the
// last tests), and a session-like loop that runs the pure FSM on it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  FsmTimers,
  ManualClock,
  nodeClock,
  step,
  type FsmAction,
  type FsmEvent,
  type FsmState,
  type TimerExpiresEvent,
} from '../../../bgp/fsm/index.js';
import { fresh, sample } from './helpers.js';

describe('FsmTimers on a ManualClock', () => {
  function setup() {
    const clock = new ManualClock();
    const fired: Array<[number, string]> = [];
    const timers = new FsmTimers((e: TimerExpiresEvent) => fired.push([clock.now, e.type]), clock);
    return { clock, fired, timers };
  }

  it('fires a started timer once, after its seconds, as its *_Expires event', () => {
    const { clock, fired, timers } = setup();
    assert.equal(timers.apply({ type: 'startTimer', timer: 'HoldTimer', seconds: 90 }), true);
    clock.advance(89_999);
    assert.deepEqual(fired, []);
    clock.advance(1);
    assert.deepEqual(fired, [[90_000, 'HoldTimer_Expires']]);
    assert.equal(timers.isRunning('HoldTimer'), false);
    clock.advance(1_000_000);
    assert.equal(fired.length, 1);
  });

  it('a restart with the same value counts again from now; with another value replaces it', () => {
    const { clock, fired, timers } = setup();
    timers.start('HoldTimer', 3);
    clock.advance(2_000);
    timers.start('HoldTimer', 3);
    clock.advance(2_000);
    assert.deepEqual(fired, []);
    clock.advance(1_000);
    assert.deepEqual(fired, [[5_000, 'HoldTimer_Expires']]);

    timers.start('KeepaliveTimer', 10);
    timers.start('KeepaliveTimer', 0.75);
    clock.advance(10_000);
    assert.deepEqual(fired.slice(1), [[5_750, 'KeepaliveTimer_Expires']]);
  });

  it('a stopped timer never fires; stopAll stops them all', () => {
    const { clock, fired, timers } = setup();
    timers.start('ConnectRetryTimer', 1);
    timers.apply({ type: 'stopTimer', timer: 'ConnectRetryTimer' });
    timers.start('HoldTimer', 1);
    timers.start('IdleHoldTimer', 1);
    timers.stopAll();
    clock.advance(5_000);
    assert.deepEqual(fired, []);
    assert.equal(clock.size, 0);
  });

  it('leaves other actions to the caller', () => {
    const { timers } = setup();
    assert.equal(timers.apply({ type: 'sendKeepalive' }), false);
    assert.equal(timers.apply({ type: 'dropTcp' }), false);
  });
});

/**
 * The loop README.md describes, with the socket side recorded instead of carried out: a
 * queue so that an action's consequences never re-enter step(), and the timer driver.
 */
class Harness {
  readonly clock = new ManualClock();
  readonly log: string[] = [];
  private readonly queue: FsmEvent[] = [];
  private busy = false;
  readonly timers = new FsmTimers((e) => this.dispatch(e), this.clock);
  constructor(public state: FsmState) {}

  dispatch(event: FsmEvent): void {
    this.queue.push(event);
    if (this.busy) return;
    this.busy = true;
    try {
      for (let e = this.queue.shift(); e !== undefined; e = this.queue.shift()) {
        const r = step(this.state, e, this.clock.now);
        this.state = r.state;
        for (const a of r.actions) this.perform(a);
      }
    } finally {
      this.busy = false;
    }
  }

  private perform(a: FsmAction): void {
    if (this.timers.apply(a)) return;
    this.log.push(`${this.clock.now / 1000}s ${a.type}${a.type === 'sessionDown' ? `:${a.reason.event}` : ''}`);
  }
}

describe('a session loop over FsmTimers', () => {
  it('sends keepalives every 30 s and drops the session when the peer goes silent for 90 s', () => {
    const h = new Harness(fresh());
    for (const type of ['ManualStart', 'Tcp_CR_Acked', 'BGPOpen', 'KeepAliveMsg'] as const) h.dispatch(sample(type));
    assert.equal(h.state.state, 'Established');
    h.log.length = 0;
    h.clock.advance(60_000);
    h.dispatch({ type: 'KeepAliveMsg' }); // the peer is alive at 60 s: hold timer counts from here
    h.clock.advance(89_999);
    assert.equal(h.state.state, 'Established');
    h.clock.advance(1);
    assert.equal(h.state.state, 'Idle');
    assert.deepEqual(h.log, [
      '30s sendKeepalive',
      '60s sendKeepalive',
      '90s sendKeepalive',
      '120s sendKeepalive',
      '150s sendNotification',
      '150s deleteRoutes',
      '150s releaseResources',
      '150s dropTcp',
      '150s sessionDown:HoldTimer_Expires',
    ]);
    // Then it restarts by itself after IdleHoldTime (5 s) and reconnects.
    h.clock.advance(5_000);
    assert.equal(h.state.state, 'Connect');
    assert.equal(h.log.at(-1), '155s connect');
  });

  it('retries a peer that refuses connections every IdleHoldTime, and keeps retrying a silent one every ConnectRetryTime', () => {
    const h = new Harness(fresh({ idleHoldTime: 5 }));
    h.dispatch({ type: 'ManualStart' });
    h.dispatch({ type: 'TcpConnectionFails' }); // refused at once
    h.clock.advance(5_000);
    assert.equal(h.state.state, 'Connect');
    // Now the SYNs go unanswered: ConnectRetryTimer drops and reconnects every 120 s.
    h.log.length = 0;
    h.clock.advance(240_000);
    assert.deepEqual(h.log, ['125s dropTcp', '125s connect', '245s dropTcp', '245s connect']);
  });
});

describe('nodeClock', () => {
  it('fires through Node timers', async () => {
    const got = await new Promise<string>((resolve, reject) => {
      const t = new FsmTimers((e) => resolve(e.type), nodeClock);
      t.start('KeepaliveTimer', 0.02);
      setTimeout(() => reject(new Error('KeepaliveTimer did not fire within 2 s')), 2_000).unref();
    });
    assert.equal(got, 'KeepaliveTimer_Expires');
  });

  it("does not keep the process alive (timers are unref'd)", () => {
    // A child that starts a 60 s hold timer and nothing else must exit at once.
    const started = Date.now();
    const code = [
      "import { FsmTimers, nodeClock } from './bgp/fsm/index.ts';",
      "new FsmTimers(() => { console.log('fired'); }, nodeClock).start('HoldTimer', 60);",
      "console.log('started');",
    ].join('\n');
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(out.trim(), 'started');
    assert.ok(Date.now() - started < 30_000, `took ${Date.now() - started} ms: want under 30 s`);
  });
});
