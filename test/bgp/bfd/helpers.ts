// Shared helpers for the BFD machine's tests: a session at 100 ms × 3, packets from a remote
// in a given state, and actions described as short strings.
import {
  bfdConfig,
  controlPacket,
  createBfdSession,
  step,
  type BfdAction,
  type BfdControlPacket,
  type BfdEvent,
  type BfdResult,
  type BfdState,
  type BfdStateName,
} from '../../../bgp/bfd/index.js';

export const LOCAL_DISCR = 0x1111;
export const REMOTE_DISCR = 0x2222;

/** A session configured for 100 ms × 3, fresh in Down. */
export function fresh(timers: { minTxInterval?: number; minRxInterval?: number; multiplier?: number } = {}): BfdState {
  return createBfdSession(bfdConfig({ minTxInterval: 100, minRxInterval: 100, multiplier: 3, ...timers }), LOCAL_DISCR, 7);
}

/** What a remote in `state` sends: 100 ms × 3 unless overridden; Your Discriminator ours unless it is Down. */
export function remote(state: BfdStateName, over: Partial<BfdControlPacket> = {}): BfdControlPacket {
  return {
    diag: 0,
    state,
    poll: false,
    final: false,
    controlPlaneIndependent: false,
    authenticationPresent: false,
    demand: false,
    multipoint: false,
    detectMult: 3,
    myDiscriminator: REMOTE_DISCR,
    yourDiscriminator: state === 'Down' || state === 'AdminDown' ? 0 : LOCAL_DISCR,
    desiredMinTxInterval: 100_000,
    requiredMinRxInterval: 100_000,
    requiredMinEchoRxInterval: 0,
    ...over,
  };
}

export function receive(s: BfdState, p: BfdControlPacket): BfdResult {
  return step(s, { type: 'ReceivedPacket', packet: p });
}

/** Feeds events in order; the last result. */
export function run(s: BfdState, events: readonly BfdEvent[]): BfdResult {
  let r: BfdResult = { state: s, actions: [] };
  for (const e of events) r = step(r.state, e);
  return r;
}

/** A session brought to `state` by real transitions (Up: a three-way handshake, and the Poll it starts answered). */
export function reach(state: BfdStateName, timers?: Parameters<typeof fresh>[0]): BfdState {
  let s = fresh(timers);
  if (state === 'Down') return s;
  if (state === 'AdminDown') return step(s, { type: 'AdminDown' }).state;
  s = receive(s, remote('Down')).state; // Init
  if (state === 'Init') return s;
  s = receive(s, remote('Up')).state; // Up, polling
  return receive(s, remote('Up', { final: true })).state;
}

export function describe(actions: readonly BfdAction[]): string[] {
  return actions.map((a) => {
    switch (a.type) {
      case 'send': {
        const p = a.packet;
        return `send:${p.state}${p.poll ? ':P' : ''}${p.final ? ':F' : ''}`;
      }
      case 'startTimer':
        return `start:${a.timer}`;
      case 'stopTimer':
        return `stop:${a.timer}`;
      case 'stateChange':
        return `state:${a.from}>${a.to}:${a.diag}`;
      default:
        return 'unknown';
    }
  });
}

export function sent(actions: readonly BfdAction[]): BfdControlPacket[] {
  return actions.flatMap((a) => (a.type === 'send' ? [a.packet] : []));
}

export function timerMs(actions: readonly BfdAction[], timer: 'TransmitTimer' | 'DetectionTimer'): number | undefined {
  for (const a of actions) if (a.type === 'startTimer' && a.timer === timer) return a.ms;
  return undefined;
}

export { controlPacket };
