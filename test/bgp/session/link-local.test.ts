// Which link-local address goes after our global IPv6 next hop (RFC 2545 §3): the one on the
// interface that holds the session's address, and only when the peer is on that link.
import assert from 'node:assert/strict';
import type { NetworkInterfaceInfo } from 'node:os';
import { linkLocalFor } from '../../../bgp/session/link-local.js';

const v6 = (address: string, cidr: string): NetworkInterfaceInfo =>
  ({ address, cidr, family: 'IPv6', netmask: '', mac: '', internal: false, scopeid: 0 }) as NetworkInterfaceInfo;
const interfaces = {
  eth0: [v6('fd00:97::10', 'fd00:97::10/64'), v6('fe80::aa:1', 'fe80::aa:1/64')],
  eth1: [v6('2001:db8:1::5', '2001:db8:1::5/64'), v6('fe80::bb:2', 'fe80::bb:2/64')],
};

describe('session: the link-local next hop (RFC 2545)', () => {
  it('the session interface’s link-local address, for a peer in its subnet', () => {
    assert.equal(linkLocalFor('fd00:97::10', 'fd00:97::1', interfaces), 'fe80::aa:1');
    assert.equal(linkLocalFor('2001:db8:1::5', '2001:db8:1:0::9', interfaces), 'fe80::bb:2');
  });
  it('none for a peer off the link, an address no interface holds, or an IPv4 session', () => {
    assert.equal(linkLocalFor('fd00:97::10', 'fd00:98::1', interfaces), undefined);
    assert.equal(linkLocalFor('fd00:99::10', 'fd00:99::1', interfaces), undefined);
    assert.equal(linkLocalFor('10.0.0.1', '10.0.0.2', interfaces), undefined);
  });
  it('a link-local peer is on the link by definition', () => {
    assert.equal(linkLocalFor('fd00:97::10', 'fe80::1%eth0', interfaces), 'fe80::aa:1');
  });
});
