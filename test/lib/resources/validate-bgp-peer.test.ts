// BGPPeer's fields of a Calico fabric design that reach the speaker and felix: ttlSecurity (GTSM),
// birdGatewayMode and reachableBy, kept as written; a bad value names its field.
import assert from 'node:assert/strict';
import { API_VERSION, type BGPPeerSpec, ValidationError, validateResource } from '../../../lib/resources/index.js';

const peer = (spec: Record<string, unknown>) =>
  validateResource({
    apiVersion: API_VERSION,
    kind: 'BGPPeer',
    metadata: { name: 'tor' },
    spec: { peerIP: '10.90.255.1', asNumber: 65001, ...spec },
  });

function refused(spec: Record<string, unknown>): ValidationError {
  try {
    peer(spec);
  } catch (e) {
    if (e instanceof ValidationError) return e;
    throw e;
  }
  throw new Error(`accepted ${JSON.stringify(spec)}`);
}

describe('BGPPeer: ttlSecurity, birdGatewayMode, reachableBy', () => {
  it('are kept as written', () => {
    const p = peer({ ttlSecurity: 1, birdGatewayMode: 'DirectIfDirectlyConnected', reachableBy: '10.0.1.1' }) as { spec: BGPPeerSpec };
    assert.deepEqual(
      { ttl: p.spec.ttlSecurity, mode: p.spec.birdGatewayMode, via: p.spec.reachableBy },
      { ttl: 1, mode: 'DirectIfDirectlyConnected', via: '10.0.1.1' },
    );
    assert.equal((peer({ ttlSecurity: 0 }).spec as BGPPeerSpec).ttlSecurity, undefined, 'ttlSecurity 0 is no GTSM');
  });

  it('bad values name the field', () => {
    assert.equal(refused({ ttlSecurity: 256 }).field, 'spec.ttlSecurity');
    assert.equal(refused({ birdGatewayMode: 'Direct' }).field, 'spec.birdGatewayMode');
    assert.equal(refused({ reachableBy: '10.0.1.1:179' }).field, 'spec.reachableBy');
    const e = refused({ reachableBy: 'fd00::1' });
    assert.equal(e.field, 'spec.reachableBy');
    assert.match(e.message, /family/);
  });
});
