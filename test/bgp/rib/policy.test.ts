// Import and export policy, as data and as functions.
import assert from 'node:assert/strict';
import { compilePolicy, Rib, type PolicyActions, type PolicyDefinition } from '../../../bgp/rib/index.js';
import { announced, drain, seq, v4Update } from '../../support/rib.js';

const route = (prefix: string, extra: object = {}) => ({
  family: 'ipv4-unicast' as const,
  prefix,
  nextHop: '192.0.2.1',
  attributes: { origin: 'igp' as const, asPath: seq(65001, 3356), communities: [65001 * 65536 + 100] },
  neighbor: { address: '192.0.2.1', asn: 65001, type: 'ebgp' as const },
  ...extra,
});

describe('rib: policy', () => {
  it('prefix lists with ge/le', () => {
    const p = compilePolicy({
      terms: [{ match: { prefixList: [{ prefix: '10.0.0.0/8', ge: 16, le: 24 }] }, action: 'accept' }],
      default: 'reject',
    });
    assert.equal(p.evaluate(route('10.1.0.0/16')), true);
    assert.equal(p.evaluate(route('10.1.2.0/24')), true);
    assert.equal(p.evaluate(route('10.0.0.0/8')), false);
    assert.equal(p.evaluate(route('10.1.2.128/25')), false);
    assert.equal(p.evaluate(route('11.1.0.0/16')), false);
    const exact = compilePolicy({ terms: [{ match: { prefixList: [{ prefix: '10.0.0.0/8' }] }, action: 'reject' }] });
    assert.equal(exact.evaluate(route('10.0.0.0/8')), false);
    assert.equal(exact.evaluate(route('10.0.0.0/9')), true);
  });

  it('community, AS path, neighbour and next hop matches', () => {
    const m = (match: PolicyDefinition['terms'][0]['match']) =>
      compilePolicy({ terms: [{ match, action: 'reject' }] }).evaluate(route('10.0.0.0/8'));
    assert.equal(m({ community: ['65001:100'] }), false);
    assert.equal(m({ community: ['65001:101'] }), true);
    assert.equal(m({ asPathContains: 3356 }), false);
    assert.equal(m({ asPathRegex: '^65001 ' }), false);
    assert.equal(m({ asPathRegex: '^3356' }), true);
    assert.equal(m({ neighbor: ['192.0.2.0/24'] }), false);
    assert.equal(m({ neighbor: ['198.51.100.1'] }), true);
    assert.equal(m({ nextHop: ['192.0.2.1'] }), false);
    assert.equal(m({ community: ['65001:100'], asPathContains: 1 }), true, 'all conditions of a term must hold');
  });

  it('bad policies are refused naming the term and field', () => {
    assert.throws(
      () => compilePolicy({ terms: [{ match: { prefixList: [{ prefix: '10.0.0.0/8', ge: 4 }] }, action: 'accept' }] }),
      /policy term 0 prefixList/,
    );
    assert.throws(() => compilePolicy({ terms: [{ action: 'accept', set: { localPref: -1 } }] }), /set.localPref/);
    assert.throws(() => compilePolicy({ terms: [{ match: { community: ['x'] }, action: 'accept' }] }), /community/);
  });

  it('import: set actions change the stored route; rejected prefixes are counted and withdrawn', () => {
    const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
    const a = rib.addPeer({
      address: '192.0.2.1',
      asn: 65001,
      routerId: '1.1.1.1',
      importPolicy: {
        terms: [
          { match: { prefixList: [{ prefix: '10.66.0.0/16', le: 32 }] }, action: 'reject' },
          {
            match: { community: ['65001:100'] },
            action: 'accept',
            set: { localPref: 250, med: 5, communitiesAdd: ['65000:1'], communitiesRemove: ['65001:100'], prepend: [65001] },
          },
        ],
      },
    });
    rib.update(a, v4Update(['10.1.0.0/16', '10.2.0.0/16', '10.66.1.0/24'], { asPath: seq(65001), communities: [65001 * 65536 + 100] }));
    const r = rib.lookup('10.1.0.0/16')!.best;
    assert.equal(r.attributes.localPref, 250);
    assert.equal(r.attributes.med, 5);
    assert.deepEqual(r.attributes.communities, [65000 * 65536 + 1]);
    assert.deepEqual(r.attributes.asPath, seq(65001, 65001));
    assert.equal(rib.lookup('10.2.0.0/16')!.best.attributes, r.attributes, 'one result set for both');
    assert.equal(rib.lookup('10.66.1.0/24'), undefined);
    assert.equal(a.stats.policyRejected, 1);
    assert.equal(rib.stats().attributeSets, 1, 'the pre-policy set was not kept');
  });

  it('a function policy on import and export; next hop set by policy', () => {
    const tag: PolicyActions = { communitiesAdd: ['65000:7'], nextHop: '198.51.100.7' };
    const rib = new Rib({ localAs: 65000, routerId: '10.255.0.1' });
    const a = rib.addPeer({
      address: '192.0.2.1',
      asn: 65001,
      routerId: '1.1.1.1',
      importPolicy: (r) => (r.prefix.startsWith('10.9.') ? false : tag),
    });
    const b = rib.addPeer({
      address: '10.0.0.2',
      asn: 65000,
      routerId: '2.2.2.2',
      exportPolicy: (r) => (r.prefix === '10.2.0.0/16' ? false : { med: 33, nextHop: 'self' }),
      localAddress: '10.0.0.100',
    });
    rib.update(a, v4Update(['10.1.0.0/16', '10.2.0.0/16', '10.9.0.0/16']));
    assert.equal(rib.lookup('10.1.0.0/16')!.best.nextHop, '198.51.100.7');
    assert.equal(rib.lookup('10.9.0.0/16'), undefined);
    const got = announced(drain(rib.adjRibOut(b)!).messages);
    assert.deepEqual(
      got.map((r) => r.prefix),
      ['10.1.0.0/16'],
    );
    assert.equal(got[0].attributes.med, 33);
    assert.equal(got[0].attributes.nextHop, '10.0.0.100');
    assert.deepEqual(got[0].attributes.communities, [65000 * 65536 + 7]);
  });
});
