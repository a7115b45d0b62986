// The codec's one mapping between address families and AFI/SAFI numbers (RFC 4760 §5).
import assert from 'node:assert/strict';
import { Afi, type AddressFamily, afiOf, familyOf, Safi } from '../../../bgp/codec/index.js';

describe('bgp/codec address families and AFI/SAFI', () => {
  it('maps AFI 1 and 2 with SAFI unicast to the IPv4 and IPv6 unicast families, and back', () => {
    assert.equal(familyOf(1, 1), 'ipv4-unicast');
    assert.equal(familyOf(2, 1), 'ipv6-unicast');
    for (const family of ['ipv4-unicast', 'ipv6-unicast'] as AddressFamily[]) {
      assert.equal(familyOf(afiOf(family), Safi.UNICAST), family);
    }
    assert.equal(afiOf('ipv4-unicast'), Afi.IPV4);
    assert.equal(afiOf('ipv6-unicast'), Afi.IPV6);
  });

  it('knows no family for what podroute does not carry: other SAFIs (multicast, VPN, flowspec), other AFIs', () => {
    for (const [afi, safi] of [
      [1, 2],
      [2, 2],
      [1, 128],
      [1, 133],
      [25, 65],
      [3, 1],
      [0, 1],
      [1, 0],
    ]) {
      assert.equal(familyOf(afi!, safi!), undefined, `${afi}/${safi}`);
    }
  });
});
