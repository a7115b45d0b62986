// checkPeerOpen: the OPEN checks that need configuration (RFC 4271 §6.2, RFC 6286).
import assert from 'node:assert/strict';
import { checkPeerOpen } from '../../../bgp/fsm/index.js';

const local = { localAs: 65001, localBgpId: 0x0a000001 };
const open = { holdTime: 90, asNumber: 65002, bgpIdentifier: 0x0a000002 };

describe('checkPeerOpen', () => {
  it('accepts an OPEN that matches the configuration', () => {
    assert.equal(checkPeerOpen(open, { ...local, peerAs: 65002 }), null);
    assert.equal(checkPeerOpen(open, { ...local, peerAs: [65003, 65002] }), null);
    assert.equal(checkPeerOpen(open, local), null, 'any AS when none is configured');
  });
  it('2/2 Bad Peer AS when the AS is not the configured one', () => {
    assert.deepEqual(checkPeerOpen(open, { ...local, peerAs: 65003 }), { code: 2, subcode: 2 });
    assert.deepEqual(checkPeerOpen(open, { ...local, peerAs: [1, 2] }), { code: 2, subcode: 2 });
  });
  it('2/6 Unacceptable Hold Time for 1 and 2', () => {
    assert.deepEqual(checkPeerOpen({ ...open, holdTime: 1 }, local), { code: 2, subcode: 6 });
    assert.deepEqual(checkPeerOpen({ ...open, holdTime: 2 }, local), { code: 2, subcode: 6 });
    assert.equal(checkPeerOpen({ ...open, holdTime: 0 }, local), null);
    assert.equal(checkPeerOpen({ ...open, holdTime: 3 }, local), null);
  });
  it('2/3 Bad BGP Identifier for 0, and for our own identifier from an iBGP peer', () => {
    assert.deepEqual(checkPeerOpen({ ...open, bgpIdentifier: 0 }, local), { code: 2, subcode: 3 });
    assert.deepEqual(checkPeerOpen({ ...open, asNumber: 65001, bgpIdentifier: local.localBgpId }, local), { code: 2, subcode: 3 });
    // RFC 6286: identifiers need only be unique within an AS, so an eBGP peer may share ours.
    assert.equal(checkPeerOpen({ ...open, bgpIdentifier: local.localBgpId }, local), null);
  });
  it('checks in the RFC order: AS before hold time before identifier', () => {
    assert.deepEqual(checkPeerOpen({ holdTime: 1, asNumber: 9, bgpIdentifier: 0 }, { ...local, peerAs: 65002 }), { code: 2, subcode: 2 });
    assert.deepEqual(checkPeerOpen({ holdTime: 1, asNumber: 65002, bgpIdentifier: 0 }, local), { code: 2, subcode: 6 });
  });
});
