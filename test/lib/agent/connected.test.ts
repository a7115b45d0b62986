// A peer is directly connected when one of the node's interface subnets holds it (or it is
// link-local): what BFDIfDirectlyConnected asks before BFD runs.
import assert from 'node:assert/strict';
import type { NetworkInterfaceInfo } from 'node:os';
import { isDirectlyConnected } from '../../../lib/agent/connected.js';

const iface = (address: string, cidr: string, family: 'IPv4' | 'IPv6', internal = false): NetworkInterfaceInfo =>
  ({
    address,
    cidr,
    family,
    internal,
    netmask: family === 'IPv4' ? '255.255.255.0' : 'ffff:ffff:ffff:ffff::',
    mac: '00:00:00:00:00:00',
  }) as NetworkInterfaceInfo;

const interfaces = {
  lo: [iface('127.0.0.1', '127.0.0.1/8', 'IPv4', true)],
  eth0: [iface('10.90.1.5', '10.90.1.5/24', 'IPv4'), iface('fd00:90:1::5', 'fd00:90:1::5/64', 'IPv6')],
  dummy0: [{ ...iface('10.90.255.7', '10.90.255.7/32', 'IPv4'), netmask: '255.255.255.255' } as NetworkInterfaceInfo],
};

describe('agent: directly connected peers', () => {
  it('a peer on an interface subnet is, of either family', () => {
    assert.equal(isDirectlyConnected('10.90.1.1', interfaces), true);
    assert.equal(isDirectlyConnected('fd00:90:1::1', interfaces), true);
  });

  it('a peer behind a router (a ToR loopback) is not, nor one on a loopback or a /32', () => {
    assert.equal(isDirectlyConnected('10.90.255.1', interfaces), false, 'a ToR loopback reached through a route');
    assert.equal(isDirectlyConnected('127.0.0.2', interfaces), false, 'loopback');
    assert.equal(isDirectlyConnected('fd00:91::1', interfaces), false);
  });

  it('a link-local peer always is; an address that is not one never is', () => {
    assert.equal(isDirectlyConnected('fe80::2%eth0', interfaces), true);
    assert.equal(isDirectlyConnected('not-an-address', interfaces), false);
  });
});
