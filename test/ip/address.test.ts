import assert from 'node:assert/strict';
import { canonicalCidr, formatAddress, hostPrefix, parseAddress, parseCidr } from '../../felix/ip.js';

describe('felix address text', () => {
  it('prints IPv6 in RFC 5952 form (longest zero run, lower case, first of equal runs)', () => {
    const f = (t: string) => formatAddress(parseAddress(t).bytes);
    assert.equal(f('2001:DB8:0:0:0:0:0:1'), '2001:db8::1');
    assert.equal(f('2001:db8:0:0:1:0:0:1'), '2001:db8::1:0:0:1');
    assert.equal(f('2001:db8:0:1:1:1:1:1'), '2001:db8:0:1:1:1:1:1'); // a single zero group is not compressed
    assert.equal(f('::'), '::');
    assert.equal(f('::ffff:10.0.0.1'), '::ffff:a00:1');
    assert.equal(f('fd00::'), 'fd00::');
  });
  it('rejects malformed addresses and prefixes', () => {
    for (const bad of ['10.0.0', '10.0.0.256', '10.0.0.1.2', '1..2.3', 'fd00:::1', '1:2:3:4:5:6:7:8:9', 'x', '']) assert.throws(() => parseAddress(bad), /address/, bad);
    assert.throws(() => parseCidr('10.0.0.0/33'), /prefix length/);
    assert.throws(() => parseCidr('10.0.0.0/'), /prefix length/);
    assert.throws(() => parseCidr('10.0.0.1/24'), /host bits/);
    assert.equal(parseCidr('10.0.0.1/24', 'x', false).prefixLength, 24);
  });
  it('canonicalises prefixes and host addresses', () => {
    assert.equal(canonicalCidr('FD00:0:0:0::/64'), 'fd00::/64');
    assert.equal(hostPrefix('10.1.2.3'), '10.1.2.3/32');
    assert.equal(hostPrefix('fd00::0002/128'), 'fd00::2/128');
    assert.throws(() => hostPrefix('10.1.2.0/24'), /single address/);
  });
});

describe('felix host prefixes (fast path agrees with the parser)', () => {
  it('canonical, non-canonical and invalid dotted quads', () => {
    assert.equal(hostPrefix('0.0.0.0'), '0.0.0.0/32');
    assert.equal(hostPrefix('10.0.0.1'), '10.0.0.1/32');
    assert.equal(hostPrefix('255.255.255.255'), '255.255.255.255/32');
    assert.equal(hostPrefix('10.00.0.1'), '10.0.0.1/32'); // leading zero: parsed, then printed canonically
    assert.throws(() => hostPrefix('10.0.0.256'), /address/);
    assert.throws(() => hostPrefix('10.0.0.'), /address/);
    assert.throws(() => hostPrefix('.10.0.0'), /address/);
  });
});
