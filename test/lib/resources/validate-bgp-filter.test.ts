// BGPFilter as Calico's API server takes it, and BGPPeer's localASNumber and filters: what is
// kept, and each refusal naming its field.
import assert from 'node:assert/strict';
import { API_VERSION, type BGPFilterSpec, type BGPPeerSpec, ValidationError, validateResource } from '../../../lib/resources/index.js';

const filter = (spec: Record<string, unknown>) =>
  validateResource({ apiVersion: API_VERSION, kind: 'BGPFilter', metadata: { name: 'f' }, spec }).spec as BGPFilterSpec;

const peer = (spec: Record<string, unknown>) =>
  validateResource({
    apiVersion: API_VERSION,
    kind: 'BGPPeer',
    metadata: { name: 'tor' },
    spec: { peerIP: '10.90.255.1', asNumber: 65001, ...spec },
  }).spec as BGPPeerSpec;

function refused(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ValidationError) return e;
    throw e;
  }
  assert.fail('accepted');
}

describe('BGPFilter validation', () => {
  it('keeps every rule list in order, with the CIDR in its canonical spelling', () => {
    const s = filter({
      exportV4: [{ action: 'Reject', matchOperator: 'Equal', cidr: '10.65.1.0/26' }, { action: 'Accept' }],
      importV6: [
        { action: 'Accept', matchOperator: 'In', cidr: 'fd00:0010::/48', prefixLength: { min: 64, max: 122 }, source: 'RemotePeers' },
      ],
    });
    assert.deepEqual(s, {
      exportV4: [{ action: 'Reject', matchOperator: 'Equal', cidr: '10.65.1.0/26' }, { action: 'Accept' }],
      importV6: [
        { action: 'Accept', matchOperator: 'In', cidr: 'fd00:10::/48', prefixLength: { min: 64, max: 122 }, source: 'RemotePeers' },
      ],
    });
  });

  it('a rule without an action is refused at its action', () => {
    assert.equal(refused(() => filter({ importV4: [{ cidr: '10.0.0.0/8', matchOperator: 'In' }] })).field, 'spec.importV4[0].action');
    assert.equal(refused(() => filter({ importV4: [{ action: 'Drop' }] })).field, 'spec.importV4[0].action');
  });

  it('a CIDR of the other family is refused in its list', () => {
    const e = refused(() => filter({ exportV4: [{ action: 'Reject', matchOperator: 'In', cidr: 'fd00::/8' }] }));
    assert.equal(e.field, 'spec.exportV4[0].cidr');
    assert.match(e.reason, /IPv6 CIDR in a list of IPv4 rules/);
    assert.equal(
      refused(() => filter({ importV6: [{ action: 'Reject', matchOperator: 'In', cidr: '10.0.0.0/8' }] })).field,
      'spec.importV6[0].cidr',
    );
  });

  it('cidr and matchOperator come together', () => {
    assert.match(refused(() => filter({ exportV4: [{ action: 'Reject', cidr: '10.0.0.0/8' }] })).reason, /both be set or both be empty/);
    assert.equal(refused(() => filter({ exportV4: [{ action: 'Reject', matchOperator: 'In' }] })).field, 'spec.exportV4[0].cidr');
    assert.equal(
      refused(() => filter({ exportV4: [{ action: 'Reject', cidr: '10.0.0.0/8', matchOperator: 'Within' }] })).field,
      'spec.exportV4[0].matchOperator',
    );
  });

  it('prefixLength needs a CIDR, In or NotIn, and lengths of the family that can match', () => {
    assert.match(refused(() => filter({ exportV4: [{ action: 'Reject', prefixLength: { min: 24 } }] })).reason, /cidr is required/);
    const eq = refused(() =>
      filter({ exportV4: [{ action: 'Reject', cidr: '10.0.0.0/8', matchOperator: 'Equal', prefixLength: { min: 24 } }] }),
    );
    assert.equal(eq.field, 'spec.exportV4[0].prefixLength');
    const rule = (prefixLength: unknown) => ({ exportV4: [{ action: 'Reject', cidr: '10.0.0.0/8', matchOperator: 'In', prefixLength }] });
    assert.equal(refused(() => filter(rule({ max: 33 }))).field, 'spec.exportV4[0].prefixLength.max');
    assert.equal(refused(() => filter(rule({ min: 26, max: 24 }))).field, 'spec.exportV4[0].prefixLength.min');
    assert.equal(refused(() => filter(rule({ max: 4 }))).field, 'spec.exportV4[0].prefixLength.max');
    assert.equal(refused(() => filter(rule({ min: 24, step: 2 }))).field, 'spec.exportV4[0].prefixLength.step');
    assert.deepEqual(
      filter({ importV6: [{ action: 'Reject', cidr: 'fd00::/8', matchOperator: 'NotIn', prefixLength: { max: 128 } }] }).importV6,
      [{ action: 'Reject', cidr: 'fd00::/8', matchOperator: 'NotIn', prefixLength: { max: 128 } }],
    );
  });

  it('unknown fields are refused with the nearest known one; the match fields podroute cannot honour by name', () => {
    assert.match(refused(() => filter({ exportV4: [{ action: 'Reject', cidrs: '10.0.0.0/8' }] })).reason, /did you mean cidr/);
    assert.equal(refused(() => filter({ exportv4: [] })).field, 'spec.exportv4');
    const iface = refused(() => filter({ exportV4: [{ action: 'Reject', interface: '*.calico' }] }));
    assert.equal(iface.field, 'spec.exportV4[0].interface');
    assert.match(iface.reason, /not supported by podroute/);
    for (const k of ['peerType', 'communities', 'asPathPrefix', 'priority', 'operations'])
      assert.match(refused(() => filter({ importV4: [{ action: 'Accept', [k]: 'x' }] })).reason, /not supported by podroute/, k);
  });

  it('source takes RemotePeers only', () => {
    assert.equal(refused(() => filter({ exportV4: [{ action: 'Reject', source: 'Local' }] })).field, 'spec.exportV4[0].source');
  });
});

describe('BGPPeer localASNumber and filters', () => {
  it('are kept as written (localASNumber in asdot too)', () => {
    assert.deepEqual(
      { local: peer({ localASNumber: 65010 }).localASNumber, filters: peer({ filters: ['tor-in', 'tor.out'] }).filters },
      { local: 65010, filters: ['tor-in', 'tor.out'] },
    );
    assert.equal(peer({ localASNumber: '1.10' }).localASNumber, 65546);
  });

  it('bad values name the field', () => {
    assert.equal(refused(() => peer({ localASNumber: 0 })).field, 'spec.localASNumber');
    assert.equal(refused(() => peer({ filters: 'tor' })).field, 'spec.filters');
    assert.equal(refused(() => peer({ filters: ['ok', 'Not_A_Name'] })).field, 'spec.filters[1]');
    assert.match(refused(() => peer({ filters: ['a', 'a'] })).reason, /named twice/);
  });
});
