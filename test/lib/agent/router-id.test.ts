// The router ID of an IPv6-only node: --router-id / CALICO_ROUTER_ID, or four octets hashed
// from the node name; `--ip none` without an IPv6 address and a bad router ID are refused
// before anything listens, naming the field.
import assert from 'node:assert/strict';
import { checkRouterId, hashRouterId, routerIdFor } from '../../../lib/agent/index.js';
import { checkNodeRunConfig, nodeRunConfig } from '../../../lib/cli/node-config.js';

describe('dual stack: router ID of an IPv6-only node', () => {
  it('takes the IPv4 address, else a configured ID, else a hash of the node name', () => {
    assert.equal(routerIdFor('n1', '10.0.0.5/24'), '10.0.0.5');
    assert.equal(routerIdFor('n1', '10.0.0.5/24', '192.0.2.9'), '192.0.2.9');
    assert.equal(routerIdFor('n1', '', '192.0.2.9'), '192.0.2.9');
    assert.equal(routerIdFor('n1', ''), hashRouterId('n1'));
    assert.equal(routerIdFor('n1', '10.0.0.5/24', 'hash'), hashRouterId('n1'));
  });

  it('hashes the node name to a stable dotted IPv4 value, different across names', () => {
    const ids = ['node-a', 'node-b', 'node-c', 'worker-17'].map(hashRouterId);
    for (const id of ids) assert.match(id, /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/);
    assert.equal(new Set(ids).size, ids.length);
    assert.equal(hashRouterId('node-a'), ids[0]);
    assert.notEqual(hashRouterId('node-a'), '0.0.0.0');
  });

  it('refuses a router ID that is not a non-zero dotted IPv4 value, naming the field', () => {
    for (const bad of ['fd00::1', '0.0.0.0', '10.0.0', 'node1', '10.0.0.1/32'])
      assert.throws(() => checkRouterId(bad), { message: /^routerId: .*, or hash\)$/ }, bad);
    checkRouterId('hash');
    checkRouterId('10.255.0.1');
  });

  it('node run: --router-id and CALICO_ROUTER_ID; IP=none means no IPv4 address and needs IPv6', () => {
    assert.equal(nodeRunConfig(['--router-id', 'hash'], {}).routerId, 'hash');
    assert.equal(nodeRunConfig([], { CALICO_ROUTER_ID: '10.1.2.3' }).routerId, '10.1.2.3');
    assert.equal(nodeRunConfig([], { IP: 'none', IP6: 'fd00::1/64' }).ipv4Address, 'none');
    assert.equal(nodeRunConfig([], { IP: 'autodetect' }).ipv4Address, undefined);
    checkNodeRunConfig(nodeRunConfig(['--ip', 'none', '--ip6', 'fd00::1/64'], {}));
    assert.throws(() => checkNodeRunConfig(nodeRunConfig(['--ip', 'none'], {})), /^Error: ipv4Address: none needs an IPv6 address/);
    assert.throws(() => checkNodeRunConfig(nodeRunConfig(['--ip', 'none', '--ip6', 'fd00::1/64', '--router-id', 'fd00::1'], {})), {
      message: /^routerId: "fd00::1" is not a dotted-quad identifier/,
    });
  });
});
