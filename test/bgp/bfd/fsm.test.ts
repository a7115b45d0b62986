// The BFD state machine of RFC 5880 §6.2, every received state and the timer in every local
// state, then the rules of §6.8 that move timers and bits. Each test's name is the rule it proves.
import assert from 'node:assert/strict';
import { BFD_STATES, detectionTime, step, transmitInterval, type BfdState, type BfdStateName } from '../../../bgp/bfd/index.js';
import { describe as actionsOf, fresh, LOCAL_DISCR, reach, receive, remote, REMOTE_DISCR, run, sent, timerMs } from './helpers.js';

/** §6.2's diagram as a table: local state → received state (or TIMER) → next state. */
const DIAGRAM: Record<BfdStateName, Record<BfdStateName | 'TIMER', BfdStateName>> = {
  Down: { AdminDown: 'Down', Down: 'Init', Init: 'Up', Up: 'Down', TIMER: 'Down' },
  Init: { AdminDown: 'Down', Down: 'Init', Init: 'Up', Up: 'Up', TIMER: 'Down' },
  Up: { AdminDown: 'Down', Down: 'Down', Init: 'Up', Up: 'Up', TIMER: 'Down' },
  // §6.8.6: in AdminDown every packet is discarded; no detection runs.
  AdminDown: { AdminDown: 'AdminDown', Down: 'AdminDown', Init: 'AdminDown', Up: 'AdminDown', TIMER: 'AdminDown' },
};

describe('BFD FSM (RFC 5880 §6.2)', () => {
  for (const local of BFD_STATES) {
    for (const input of [...BFD_STATES, 'TIMER'] as const) {
      const to = DIAGRAM[local][input];
      it(`§6.2: ${local} + ${input === 'TIMER' ? 'Detection Time expired' : `received ${input}`} → ${to}`, () => {
        // A session in Down has heard the remote before, so that its detection timer runs too.
        let s = local === 'Down' ? receive(reach('Init'), remote('AdminDown')).state : reach(local);
        if (local === 'AdminDown') s = { ...s, timers: { ...s.timers, DetectionTimer: 300 } };
        const r = input === 'TIMER' ? step(s, { type: 'DetectionTimerExpired' }) : receive(s, remote(input));
        assert.equal(r.state.sessionState, to, `${local} on ${input} goes to ${to}`);
      });
    }
  }

  it('§6.2: Down + DOWN → Init sends Init at once, echoing the remote discriminator', () => {
    const r = receive(fresh(), remote('Down'));
    assert.deepEqual(actionsOf(r.actions).slice(0, 2), ['state:Down>Init:0', 'send:Init']);
    assert.equal(sent(r.actions)[0].yourDiscriminator, REMOTE_DISCR, 'Your Discriminator is the remote My Discriminator');
    assert.equal(sent(r.actions)[0].myDiscriminator, LOCAL_DISCR, 'My Discriminator is ours');
  });

  it('§6.8.6: the remote variables are copied from every packet', () => {
    const r = receive(
      fresh(),
      remote('Down', { desiredMinTxInterval: 250_000, requiredMinRxInterval: 400_000, detectMult: 5, demand: true }),
    );
    assert.equal(r.state.remoteDiscr, REMOTE_DISCR);
    assert.equal(r.state.remoteSessionState, 'Down');
    assert.equal(r.state.remoteMinRxInterval, 400_000);
    assert.equal(r.state.remoteDesiredMinTxInterval, 250_000);
    assert.equal(r.state.remoteDetectMult, 5);
    assert.equal(r.state.remoteDemandMode, true);
  });

  it('§6.8.6: a remote AdminDown takes an Up session Down with diagnostic 3 (neighbor signaled session down)', () => {
    const r = receive(reach('Up'), remote('AdminDown'));
    assert.deepEqual(actionsOf(r.actions).slice(0, 1), ['state:Up>Down:3']);
    assert.equal(r.state.localDiag, 3);
  });

  it('§6.8.6: an Up session told Down by the remote goes Down with diagnostic 3', () => {
    const r = receive(reach('Up'), remote('Down'));
    assert.equal(r.state.sessionState, 'Down');
    assert.equal(r.state.localDiag, 3);
  });

  it('§6.8.6: a Poll is answered at once with a Final and without the Poll bit', () => {
    const r = receive(reach('Up'), remote('Up', { poll: true }));
    const finals = sent(r.actions).filter((p) => p.final);
    assert.equal(finals.length, 1, 'one Final goes out');
    assert.equal(finals[0].poll, false, 'never P and F together (§6.5)');
  });

  it('§6.8.6: in AdminDown a packet changes the remote variables but not the state, and is not answered', () => {
    const r = receive(reach('AdminDown'), remote('Up', { poll: true, requiredMinRxInterval: 2_000_000 }));
    assert.equal(r.state.sessionState, 'AdminDown');
    assert.equal(r.state.remoteMinRxInterval, 2_000_000);
    assert.equal(sent(r.actions).length, 0, 'no Final from AdminDown');
    assert.equal(r.state.timers.DetectionTimer, null, 'no detection in AdminDown');
  });

  it('§6.8.3: until Up the session advertises and sends at 1 s at least, whatever is configured', () => {
    const s = fresh();
    assert.equal(s.desiredMinTxInterval, 1_000_000);
    const r = step(receive(s, remote('Down')).state, { type: 'TransmitTimerExpired' });
    const ms = timerMs(r.actions, 'TransmitTimer') ?? 0;
    assert.ok(ms >= 750 && ms <= 1000, `Init sends every 750..1000 ms, not ${ms}`);
  });

  it('§6.8.3: reaching Up advertises the configured interval in a Poll, and sends faster at once (a decrease)', () => {
    const r = receive(reach('Init'), remote('Up'));
    assert.equal(r.state.sessionState, 'Up');
    assert.equal(r.state.desiredMinTxInterval, 100_000);
    assert.equal(r.state.polling, true);
    assert.equal(transmitInterval(r.state), 100_000, 'a lower DesiredMinTx takes effect at once');
    assert.ok(
      sent(r.actions).some((p) => p.poll && p.state === 'Up'),
      'the Up packet carries the Poll',
    );
  });

  it('§6.5: periodic packets carry the Poll until the Final comes, then no more', () => {
    const polling = receive(reach('Init'), remote('Up')).state;
    const before = step(polling, { type: 'TransmitTimerExpired' });
    assert.equal(sent(before.actions)[0].poll, true, 'P while the sequence runs');
    const done = receive(before.state, remote('Up', { final: true }));
    assert.equal(done.state.polling, false);
    const after = step(done.state, { type: 'TransmitTimerExpired' });
    assert.equal(sent(after.actions)[0].poll, false, 'no P after the Final');
  });

  it('§6.8.3: a higher DesiredMinTx while Up is advertised at once but used only after the Final', () => {
    const up = reach('Up');
    const r = step(up, { type: 'SetParameters', desiredMinTxInterval: 500_000 });
    assert.equal(r.state.desiredMinTxInterval, 500_000, 'advertised');
    assert.equal(transmitInterval(r.state), 100_000, 'still sending at the old rate');
    assert.equal(sent(r.actions)[0]?.poll, true, 'a Poll goes out at once');
    const f = receive(r.state, remote('Up', { final: true }));
    assert.equal(transmitInterval(f.state), 500_000, 'the new rate after the Final');
  });

  it('§6.8.3: a lower RequiredMinRx while Up keeps the old detection time until the Final', () => {
    const up = reach('Up', { minRxInterval: 300 });
    assert.equal(detectionTime(up), 900_000);
    const r = step(up, { type: 'SetParameters', requiredMinRxInterval: 100_000 });
    assert.equal(r.state.requiredMinRxInterval, 100_000);
    assert.equal(detectionTime(r.state), 900_000, 'unchanged while polling');
    const f = receive(r.state, remote('Up', { final: true }));
    assert.equal(detectionTime(f.state), 300_000);
  });

  it('§6.8.3: outside Up a parameter change takes effect at once, without a Poll', () => {
    const r = step(fresh(), { type: 'SetParameters', requiredMinRxInterval: 50_000 });
    assert.equal(r.state.polling, false);
    assert.equal(r.state.rxIntervalInEffect, 50_000);
  });

  it('§6.8.4: the detection time is the remote Detect Mult times the larger of our RequiredMinRx and its DesiredMinTx', () => {
    const r = receive(fresh(), remote('Down', { detectMult: 4, desiredMinTxInterval: 250_000 }));
    assert.equal(detectionTime(r.state), 1_000_000);
    assert.equal(timerMs(r.actions, 'DetectionTimer'), 1000, 'the timer runs that long');
    const slow = receive(fresh({ minRxInterval: 400 }), remote('Down', { detectMult: 3, desiredMinTxInterval: 100_000 }));
    assert.equal(detectionTime(slow.state), 1_200_000);
  });

  it('§6.8.4: every valid packet restarts the detection timer', () => {
    const r = receive(reach('Up'), remote('Up'));
    assert.equal(timerMs(r.actions, 'DetectionTimer'), 300);
  });

  it('§6.8.4: the Detection Time expiring in Up gives Down with diagnostic 1, forgets the remote, and slows to 1 s', () => {
    const r = step(reach('Up'), { type: 'DetectionTimerExpired' });
    assert.deepEqual(actionsOf(r.actions).slice(0, 2), ['state:Up>Down:1', 'send:Down']);
    assert.equal(r.state.remoteDiscr, 0, 'bfd.RemoteDiscr is zero again (§6.8.1)');
    assert.equal(r.state.desiredMinTxInterval, 1_000_000);
    assert.equal(sent(r.actions)[0].yourDiscriminator, 0);
  });

  it('§6.8.1: the Detection Time expiring in Down zeroes bfd.RemoteDiscr and changes no state', () => {
    const down = receive(reach('Init'), remote('AdminDown')).state;
    const r = step(down, { type: 'DetectionTimerExpired' });
    assert.equal(r.state.sessionState, 'Down');
    assert.equal(r.state.remoteDiscr, 0);
    assert.equal(actionsOf(r.actions).filter((a) => a.startsWith('state:')).length, 0, 'no state change');
  });

  it('a timer expiry for a timer that is not running is stale and changes nothing', () => {
    const s = fresh();
    assert.equal(s.timers.DetectionTimer, null);
    const r = step(s, { type: 'DetectionTimerExpired' });
    assert.equal(r.state, s);
    assert.deepEqual(r.actions, []);
  });

  it('§6.8.7: periodic packets come after 75–100 % of the transmit interval, spread over that range', () => {
    let s = reach('Up');
    const seen: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const r = step(s, { type: 'TransmitTimerExpired' });
      seen.push(timerMs(r.actions, 'TransmitTimer') ?? -1);
      s = r.state;
    }
    assert.ok(Math.min(...seen) >= 75 && Math.max(...seen) <= 100, `within 75..100 ms: ${Math.min(...seen)}..${Math.max(...seen)}`);
    assert.ok(Math.max(...seen) - Math.min(...seen) >= 20, 'jitter is spread, not constant');
  });

  it('§6.8.7: with Detect Mult 1 the interval is 75–90 %, so one packet is never late', () => {
    let s = reach('Up', { multiplier: 1 });
    const seen: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const r = step(s, { type: 'TransmitTimerExpired' });
      seen.push(timerMs(r.actions, 'TransmitTimer') ?? -1);
      s = r.state;
    }
    assert.ok(Math.min(...seen) >= 75 && Math.max(...seen) <= 90, `within 75..90 ms: ${Math.min(...seen)}..${Math.max(...seen)}`);
  });

  it('§6.8.2: we send no faster than the remote Required Min RX Interval', () => {
    const r = receive(reach('Up'), remote('Up', { requiredMinRxInterval: 500_000 }));
    assert.equal(transmitInterval(r.state), 500_000);
    const ms = timerMs(r.actions, 'TransmitTimer') ?? 0;
    assert.ok(ms >= 375 && ms <= 500, `the transmit timer is rescheduled at once: ${ms}`);
  });

  it('§6.8.7: a remote Required Min RX Interval of zero stops periodic packets, not the timer', () => {
    const s = receive(reach('Up'), remote('Up', { requiredMinRxInterval: 0 })).state;
    const r = step(s, { type: 'TransmitTimerExpired' });
    assert.equal(sent(r.actions).length, 0);
    assert.notEqual(r.state.timers.TransmitTimer, null, 'the timer keeps running');
  });

  it('§6.8.16: AdminDown sets diagnostic 7, stops detection and tells the remote; AdminUp returns to Down', () => {
    const r = step(reach('Up'), { type: 'AdminDown' });
    assert.deepEqual(actionsOf(r.actions).slice(0, 3), ['stop:DetectionTimer', 'state:Up>AdminDown:7', 'send:AdminDown']);
    const back = step(r.state, { type: 'AdminUp' });
    assert.equal(back.state.sessionState, 'Down');
    assert.equal(back.state.localDiag, 0);
  });

  it('step is pure: the state given is not changed, and the same input gives the same output', () => {
    const deepFreeze = (o: BfdState) =>
      Object.freeze({ ...o, timers: Object.freeze({ ...o.timers }), config: Object.freeze({ ...o.config }) });
    const s = deepFreeze(reach('Init'));
    const a = run(s, [{ type: 'ReceivedPacket', packet: remote('Up') }, { type: 'TransmitTimerExpired' }]);
    const b = run(s, [{ type: 'ReceivedPacket', packet: remote('Up') }, { type: 'TransmitTimerExpired' }]);
    assert.deepEqual(a, b);
    assert.equal(s.sessionState, 'Init', 'the input state is untouched');
  });
});
