// Connection collision (RFC 4271 §6.8, RFC 6286 §2.3): the pure decision, the FSM's
// OpenCollisionDump handling, and two FSMs for one peer resolved end to end.
import assert from 'node:assert/strict';
import { collisionWinner, resolveCollision, step, type FsmState } from '../../../bgp/fsm/index.js';
import { PEER_OPEN, describe as actionsOf, go, fresh, reach } from './helpers.js';
import { parseIpv4Number as ip } from '../../../ip/index.js';

describe('collisionWinner', () => {
  it('keeps the connection initiated by the higher BGP Identifier', () => {
    assert.equal(collisionWinner({ localBgpId: ip('10.0.0.2'), remoteBgpId: ip('10.0.0.1') }), 'outgoing');
    assert.equal(collisionWinner({ localBgpId: ip('10.0.0.1'), remoteBgpId: ip('10.0.0.2') }), 'incoming');
  });
  it('compares as unsigned 32-bit integers, also when given a signed reading', () => {
    // 192.0.2.1 is negative as an int32; it is still higher than 10.0.0.1.
    assert.equal(collisionWinner({ localBgpId: ip('192.0.2.1'), remoteBgpId: ip('10.0.0.1') }), 'outgoing');
    assert.equal(collisionWinner({ localBgpId: ip('192.0.2.1') | 0, remoteBgpId: ip('10.0.0.1') }), 'outgoing');
    assert.equal(collisionWinner({ localBgpId: ip('10.0.0.1'), remoteBgpId: ip('255.255.255.255') | 0 }), 'incoming');
  });
  it('with equal identifiers (RFC 6286), the larger AS initiated the survivor', () => {
    const id = ip('10.0.0.1');
    assert.equal(collisionWinner({ localBgpId: id, remoteBgpId: id, localAs: 65001, remoteAs: 65002 }), 'incoming');
    assert.equal(collisionWinner({ localBgpId: id, remoteBgpId: id, localAs: 4200000000, remoteAs: 65002 }), 'outgoing');
    assert.equal(collisionWinner({ localBgpId: id, remoteBgpId: id, localAs: 65001, remoteAs: 65001 }), null);
    assert.equal(collisionWinner({ localBgpId: id, remoteBgpId: id }), null);
  });
});

describe('resolveCollision', () => {
  const ids = { localBgpId: ip('10.0.0.1'), remoteBgpId: ip('10.0.0.2') }; // the peer's connection wins
  it('no collision while the other connection has not sent its OPEN', () => {
    for (const state of ['Idle', 'Connect', 'Active'] as const) {
      assert.equal(resolveCollision({ ...ids, existing: { direction: 'outgoing', state }, newDirection: 'incoming' }), 'none');
    }
  });
  it('OpenSent and OpenConfirm: by identifier', () => {
    for (const state of ['OpenSent', 'OpenConfirm'] as const) {
      assert.equal(resolveCollision({ ...ids, existing: { direction: 'outgoing', state }, newDirection: 'incoming' }), 'dumpExisting');
      assert.equal(resolveCollision({ ...ids, existing: { direction: 'incoming', state }, newDirection: 'outgoing' }), 'dumpNew');
    }
  });
  it('Established wins unless CollisionDetectEstablishedState', () => {
    const existing = { direction: 'outgoing', state: 'Established' } as const;
    assert.equal(resolveCollision({ ...ids, existing, newDirection: 'incoming' }), 'dumpNew');
    assert.equal(resolveCollision({ ...ids, existing, newDirection: 'incoming', collisionDetectEstablishedState: true }), 'dumpExisting');
  });
  it('two connections from the same side: the older one is dropped unless Established', () => {
    assert.equal(
      resolveCollision({ ...ids, existing: { direction: 'incoming', state: 'OpenConfirm' }, newDirection: 'incoming' }),
      'dumpExisting',
    );
    assert.equal(
      resolveCollision({
        ...ids,
        existing: { direction: 'incoming', state: 'Established' },
        newDirection: 'incoming',
        collisionDetectEstablishedState: true,
      }),
      'dumpNew',
    );
  });
  it('identical identity keeps the existing connection', () => {
    const same = { localBgpId: 1, remoteBgpId: 1, localAs: 65001, remoteAs: 65001 };
    assert.equal(
      resolveCollision({ ...same, existing: { direction: 'outgoing', state: 'OpenConfirm' }, newDirection: 'incoming' }),
      'dumpNew',
    );
  });
});

describe('FSM: OpenCollisionDump', () => {
  it('OpenSent and OpenConfirm send Cease 6/7 and go to Idle without restarting', () => {
    for (const name of ['OpenSent', 'OpenConfirm'] as const) {
      const r = step(reach(name), { type: 'OpenCollisionDump' }, 0);
      assert.equal(r.state.state, 'Idle');
      assert.equal(actionsOf(r.actions)[0], 'sendNotification:6/7');
      const down = r.actions.find((a) => a.type === 'sessionDown');
      assert.deepEqual(down, {
        type: 'sessionDown',
        wasEstablished: false,
        reason: { event: 'OpenCollisionDump', from: name, sent: { code: 6, subcode: 7 } },
      });
    }
  });
  it('Established ignores it unless CollisionDetectEstablishedState; then Cease 6/7 and routes deleted', () => {
    assert.deepEqual(step(reach('Established'), { type: 'OpenCollisionDump' }, 0).actions, []);
    const r = step(reach('Established', { collisionDetectEstablishedState: true }), { type: 'OpenCollisionDump' }, 0);
    assert.equal(r.state.state, 'Idle');
    assert.deepEqual(actionsOf(r.actions), [
      'sendNotification:6/7',
      'stopTimer:HoldTimer',
      'stopTimer:KeepaliveTimer',
      'deleteRoutes',
      'releaseResources',
      'dropTcp',
      'sessionDown',
    ]);
    assert.equal(r.state.connectRetryCounter, 1);
  });
});

describe('collision end to end: two FSMs for one peer', () => {
  // Both sides connect at once. Our outgoing connection reached OpenConfirm; the peer's incoming
  // connection gets its own FSM (passive start, then TcpConnectionConfirmed) and delivers an OPEN.
  function scenario(localId: number, remoteId: number) {
    const outgoing = go(fresh(), 'ManualStart', 'Tcp_CR_Acked', 'BGPOpen');
    const incoming = go(fresh(), 'ManualStart_with_PassiveTcpEstablishment', 'TcpConnectionConfirmed');
    const open = { ...PEER_OPEN, bgpIdentifier: remoteId };
    const outcome = resolveCollision({
      localBgpId: localId,
      remoteBgpId: remoteId,
      existing: { direction: 'outgoing', state: outgoing.state },
      newDirection: 'incoming',
    });
    let out: FsmState = outgoing;
    let inc: FsmState = incoming;
    const sent: string[] = [];
    if (outcome === 'dumpExisting') {
      const r = step(out, { type: 'OpenCollisionDump' }, 0);
      out = r.state;
      sent.push(
        ...actionsOf(r.actions)
          .filter((a) => a.startsWith('send'))
          .map((a) => `out:${a}`),
      );
      inc = go(step(inc, { type: 'BGPOpen', open }, 0).state, 'KeepAliveMsg');
    } else {
      const r = step(inc, { type: 'OpenCollisionDump' }, 0);
      inc = r.state;
      sent.push(
        ...actionsOf(r.actions)
          .filter((a) => a.startsWith('send'))
          .map((a) => `in:${a}`),
      );
      out = go(out, 'KeepAliveMsg');
    }
    return { outcome, out, inc, sent };
  }

  it('the peer has the higher identifier: our connection is dumped, theirs is Established', () => {
    const { outcome, out, inc, sent } = scenario(ip('10.0.0.1'), ip('10.0.0.2'));
    assert.equal(outcome, 'dumpExisting');
    assert.equal(out.state, 'Idle');
    assert.equal(out.timers.IdleHoldTimer, null, 'the dumped FSM does not reconnect by itself');
    assert.equal(inc.state, 'Established');
    assert.deepEqual(sent, ['out:sendNotification:6/7']);
  });

  it('we have the higher identifier: the incoming connection is dumped, ours is Established', () => {
    const { outcome, out, inc, sent } = scenario(ip('10.0.0.3'), ip('10.0.0.2'));
    assert.equal(outcome, 'dumpNew');
    assert.equal(out.state, 'Established');
    assert.equal(inc.state, 'Idle');
    assert.deepEqual(sent, ['in:sendNotification:6/7']);
  });
});
