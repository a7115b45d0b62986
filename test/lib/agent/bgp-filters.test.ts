// BGPFilter rules as the agent applies them, after Calico: the first matching rule decides, a
// filter with no match passes the route to the next, no match at all gets the default; each
// operator and prefixLength as Calico renders them for BIRD.
import assert from 'node:assert/strict';
import type { PolicyFunction, PolicyRoute } from '../../../bgp/index.js';
import { FilterPolicyCache, cidrMatch, filterPolicies } from '../../../lib/agent/bgp-filters.js';
import { parseCidr } from '../../../ip/index.js';
import type { BGPFilterRule, BGPFilterSpec } from '../../../lib/resources/index.js';

const route = (prefix: string, fromPeer = true): PolicyRoute => ({
  family: prefix.includes(':') ? 'ipv6-unicast' : 'ipv4-unicast',
  prefix,
  nextHop: prefix.includes(':') ? 'fd00::1' : '10.0.0.1',
  attributes: {},
  neighbor: fromPeer ? { address: '10.0.0.9', asn: 65000, type: 'ebgp' } : undefined,
});
const matches = (rule: Omit<BGPFilterRule, 'action'>, prefix: string) => cidrMatch(rule)(parseCidr(prefix, 'prefix', false));
const run = (p: PolicyFunction | undefined, r: PolicyRoute) => (p === undefined ? 'no policy' : p(r));

describe('BGPFilter rules', () => {
  it('In matches the CIDR and every longer prefix inside it; NotIn the rest', () => {
    const rule = { cidr: '10.65.0.0/16', matchOperator: 'In' as const };
    assert.deepEqual(
      ['10.65.0.0/16', '10.65.1.0/26', '10.65.1.1/32', '10.0.0.0/8', '10.66.0.0/26'].map((p) => matches(rule, p)),
      [true, true, true, false, false],
    );
    assert.deepEqual(
      ['10.65.1.0/26', '10.0.0.0/8'].map((p) => matches({ ...rule, matchOperator: 'NotIn' }, p)),
      [false, true],
    );
  });

  it('Equal matches the CIDR alone; NotEqual everything else, longer prefixes inside it too', () => {
    const rule = { cidr: '10.65.1.0/26', matchOperator: 'Equal' as const };
    assert.deepEqual(
      ['10.65.1.0/26', '10.65.1.0/27', '10.65.0.0/16'].map((p) => matches(rule, p)),
      [true, false, false],
    );
    assert.deepEqual(
      ['10.65.1.0/26', '10.65.1.0/27'].map((p) => matches({ ...rule, matchOperator: 'NotEqual' }, p)),
      [false, true],
    );
  });

  it('prefixLength bounds the lengths In counts as inside: min and max inclusive, never shorter than the CIDR', () => {
    const rule = { cidr: '10.0.0.0/8', matchOperator: 'In' as const, prefixLength: { min: 16, max: 24 } };
    assert.deepEqual(
      ['10.0.0.0/8', '10.1.0.0/16', '10.1.2.0/24', '10.1.2.0/25'].map((p) => matches(rule, p)),
      [false, true, true, false],
    );
    assert.equal(matches({ ...rule, prefixLength: { min: 4 } }, '10.0.0.0/8'), true, 'a min below the CIDR length is the CIDR length');
    assert.equal(matches({ ...rule, matchOperator: 'NotIn' }, '10.1.2.0/25'), true, 'NotIn is the complement, lengths included');
    const v6 = { cidr: 'fd00:10::/48', matchOperator: 'In' as const, prefixLength: { max: 64 } };
    assert.deepEqual(
      ['fd00:10:0:1::/64', 'fd00:10:0:1::/122'].map((p) => matches(v6, p)),
      [true, false],
    );
  });

  it('the first matching rule decides, in the order written', () => {
    const { importPolicy } = filterPolicies([
      {
        importV4: [
          { action: 'Accept', matchOperator: 'Equal', cidr: '10.65.1.0/26' },
          { action: 'Reject', matchOperator: 'In', cidr: '10.65.0.0/16' },
        ],
      },
    ]);
    assert.equal(run(importPolicy, route('10.65.1.0/26')), true);
    assert.equal(run(importPolicy, route('10.65.2.0/26')), false);
  });

  it('a filter whose rules do not match passes the route to the next filter', () => {
    const filters: BGPFilterSpec[] = [
      { exportV4: [{ action: 'Accept', matchOperator: 'In', cidr: '10.1.0.0/16' }] },
      { exportV4: [{ action: 'Reject', matchOperator: 'In', cidr: '10.0.0.0/8' }] },
    ];
    const { exportPolicy } = filterPolicies(filters);
    assert.equal(run(exportPolicy, route('10.1.5.0/24')), true, 'the first filter accepts it');
    assert.equal(run(exportPolicy, route('10.2.5.0/24')), false, 'the second filter rejects it');
  });

  it('with no rule matching, import accepts and export gives what the peer is sent anyway', () => {
    const only = (r: PolicyRoute) => r.prefix === '10.9.0.0/24';
    const { importPolicy, exportPolicy } = filterPolicies(
      [
        {
          importV4: [{ action: 'Reject', matchOperator: 'Equal', cidr: '10.1.0.0/24' }],
          exportV4: [{ action: 'Reject', matchOperator: 'Equal', cidr: '10.1.0.0/24' }],
        },
      ],
      only,
    );
    assert.equal(run(importPolicy, route('10.2.0.0/24')), true, 'import default: accept');
    assert.equal(run(exportPolicy, route('10.9.0.0/24')), true, 'export default: the default policy says yes');
    assert.equal(run(exportPolicy, route('10.2.0.0/24')), false, 'export default: the default policy says no');
  });

  it('an export Accept is final: it sends a route the default would not', () => {
    const { exportPolicy } = filterPolicies([{ exportV4: [{ action: 'Accept', matchOperator: 'In', cidr: '10.96.0.0/12' }] }], () => false);
    assert.equal(run(exportPolicy, route('10.96.0.10/32')), true);
  });

  it("rules read the route's family list only: a V4 rule never decides an IPv6 route", () => {
    const { importPolicy } = filterPolicies([{ importV4: [{ action: 'Reject' }] }]);
    assert.equal(run(importPolicy, route('10.0.0.0/24')), false);
    assert.equal(run(importPolicy, route('fd00::/64')), true);
  });

  it('source RemotePeers holds for routes learned from a peer, not for the ones the node originates', () => {
    const { exportPolicy } = filterPolicies([{ exportV4: [{ action: 'Reject', source: 'RemotePeers' }] }]);
    assert.equal(run(exportPolicy, route('10.5.0.0/24', true)), false, 'a learned route is rejected');
    assert.equal(run(exportPolicy, route('10.5.0.0/24', false)), true, 'our own route passes');
  });

  it('a direction no filter has rules for keeps the default policy, so the speaker does no per-prefix work', () => {
    const dflt = () => true;
    const p = filterPolicies([{ importV4: [{ action: 'Reject' }] }], dflt);
    assert.equal(p.exportPolicy, dflt);
    assert.equal(filterPolicies([{ exportV6: [{ action: 'Reject' }] }]).importPolicy, undefined);
  });

  it('the same filters give back the same policy objects, so a running session is not sent its table again', () => {
    const cache = new FilterPolicyCache();
    const spec: BGPFilterSpec = { exportV4: [{ action: 'Reject' }] };
    const a = cache.policies([spec]);
    cache.sweep();
    assert.equal(cache.policies([{ exportV4: [{ action: 'Reject' }] }]).exportPolicy, a.exportPolicy);
    assert.notEqual(cache.policies([{ exportV4: [{ action: 'Accept' }] }]).exportPolicy, a.exportPolicy, 'an edit gives new ones');
    cache.sweep();
    cache.sweep();
    assert.notEqual(cache.policies([spec]).exportPolicy, a.exportPolicy, 'unused policies are forgotten');
  });
});
