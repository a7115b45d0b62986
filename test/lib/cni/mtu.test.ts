// The pod MTU the plugin picks when the netconf names none: the tunnel's, from FelixConfiguration.
import assert from 'node:assert/strict';
import { podMtu } from '../../../lib/cni/mtu.js';
import { API_VERSION, type FelixConfiguration, type FelixConfigurationSpec, type IPPool } from '../../../lib/resources/index.js';

const pool = (cidr: string, spec: Partial<IPPool['spec']> = {}): IPPool => ({
  apiVersion: API_VERSION,
  kind: 'IPPool',
  metadata: { name: cidr },
  spec: { cidr, blockSize: 26, ipipMode: 'Never', vxlanMode: 'Never', ...spec },
});
const felix = (name: string, spec: FelixConfigurationSpec): FelixConfiguration => ({
  apiVersion: API_VERSION,
  kind: 'FelixConfiguration',
  metadata: { name },
  spec,
});

describe('cni pod MTU', () => {
  it('an unencapsulated pool with WireGuard off: no MTU (the kernel default)', () => {
    assert.equal(podMtu([pool('10.1.0.0/16')], [felix('default', { ipipMTU: 1400 })], 'n1'), undefined);
  });

  it("IPIP: felix's default tunl0 MTU, or ipipMTU, the node's own configuration over the default", () => {
    const ipip = [pool('10.1.0.0/16', { ipipMode: 'CrossSubnet' })];
    assert.equal(podMtu(ipip, [], 'n1'), 1440);
    assert.equal(podMtu(ipip, [felix('default', { ipipMTU: 1420 })], 'n1'), 1420);
    assert.equal(podMtu(ipip, [felix('default', { ipipMTU: 1420 }), felix('node.n1', { ipipMTU: 1300 })], 'n1'), 1300);
    assert.equal(podMtu(ipip, [felix('default', { ipipMTU: 1420 }), felix('node.n2', { ipipMTU: 1300 })], 'n1'), 1420);
  });

  it('VXLAN per family, and the smallest MTU when the pod has addresses from pools of different tunnels', () => {
    const v4 = pool('10.1.0.0/16', { vxlanMode: 'Always' });
    const v6 = pool('fd00:1::/48', { vxlanMode: 'Always' });
    assert.equal(podMtu([v4], [], 'n1'), 1450);
    assert.equal(podMtu([v6], [felix('default', { vxlanMTUV6: 1380 })], 'n1'), 1380);
    assert.equal(podMtu([v4, v6], [], 'n1'), 1430);
    assert.equal(podMtu([v4, pool('10.2.0.0/16', { ipipMode: 'Always' })], [felix('default', { ipipMTU: 1480 })], 'n1'), 1450);
  });

  it("WireGuard on for the pool's family: the WireGuard device's MTU (wireguardMTU, 0 the default), the smaller when the pool tunnels too", () => {
    const plain = pool('10.1.0.0/16');
    const plain6 = pool('fd00:1::/48');
    const ipip = pool('10.2.0.0/16', { ipipMode: 'Always' });
    assert.equal(podMtu([plain], [felix('default', { wireguardEnabled: true })], 'n1'), 1440, '1500 less IPv4 WireGuard 60');
    assert.equal(podMtu([plain], [felix('default', { wireguardEnabled: true, wireguardMTU: 0 })], 'n1'), 1440, '0 is the default');
    assert.equal(podMtu([plain], [felix('default', { wireguardEnabled: true, wireguardMTU: 1380 })], 'n1'), 1380);
    assert.equal(podMtu([plain], [felix('default', { wireguardMTU: 1380 })], 'n1'), undefined, 'WireGuard off: its MTU does not apply');
    assert.equal(
      podMtu([plain6], [felix('default', { wireguardEnabled: true })], 'n1'),
      undefined,
      'IPv4 WireGuard says nothing of IPv6 pods',
    );
    assert.equal(podMtu([plain6], [felix('default', { wireguardEnabledV6: true })], 'n1'), 1420, '1500 less IPv6 WireGuard 80');
    assert.equal(podMtu([plain6], [felix('default', { wireguardEnabledV6: true, wireguardMTUV6: 1300 })], 'n1'), 1300);
    assert.equal(
      podMtu([plain], [felix('default', { wireguardEnabled: true }), felix('node.n1', { wireguardMTU: 1400 })], 'n1'),
      1400,
      "the node's own configuration over the default",
    );
    assert.equal(podMtu([ipip], [felix('default', { wireguardEnabled: true, wireguardMTU: 1400, ipipMTU: 1480 })], 'n1'), 1400);
    assert.equal(podMtu([ipip], [felix('default', { wireguardEnabled: true, wireguardMTU: 1480, ipipMTU: 1420 })], 'n1'), 1420);
  });
});
