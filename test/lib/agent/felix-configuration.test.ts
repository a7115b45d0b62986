// FelixConfiguration as the node agent takes it: "default" first, the node's "node.<name>" over
// it, into felix's own options (resync period, VXLAN VNI/port/MTU, IPIP MTU) and the health port.
import assert from 'node:assert/strict';
import { felixSettings } from '../../../lib/agent/felix-configuration.js';
import { validateResource, type FelixConfiguration } from '../../../lib/resources/index.js';

const fc = (name: string, spec: Record<string, unknown>): FelixConfiguration =>
  validateResource({ apiVersion: 'projectcalico.org/v3', kind: 'FelixConfiguration', metadata: { name }, spec }) as FelixConfiguration;

describe('agent: FelixConfiguration', () => {
  it('nothing configured: felix keeps its own defaults', () => {
    assert.deepEqual(felixSettings([], 'w1'), { felix: {} });
  });

  it('default, then node.<name> over it; another node untouched by it', () => {
    const configs = [
      fc('default', { routeRefreshInterval: '90s', vxlanVNI: 4100, vxlanMTU: 1410, ipipMTU: 1400, healthPort: 9199 }),
      fc('node.w1', { routeRefreshInterval: '30s', vxlanPort: 8472, healthHost: '0.0.0.0' }),
    ];
    assert.deepEqual(felixSettings(configs, 'w1'), {
      felix: { resyncIntervalMs: 30_000, vxlan: { vni: 4100, port: 8472, mtu: 1410 }, ipip: { mtu: 1400 } },
      healthHost: '0.0.0.0',
      healthPort: 9199,
    });
    assert.deepEqual(felixSettings(configs, 'w2'), {
      felix: { resyncIntervalMs: 90_000, vxlan: { vni: 4100, mtu: 1410 }, ipip: { mtu: 1400 } },
      healthPort: 9199,
    });
  });

  it("flow logs: flowLogsFileEnabled turns them on with Calico's window and aggregation fields; bad values name the field", () => {
    assert.equal(felixSettings([fc('default', { flowLogsFlushInterval: '30s' })], 'w1').flowLogs, undefined, 'off unless enabled');
    const on = [
      fc('default', { flowLogsFileEnabled: true, flowLogsFlushInterval: '30s', flowLogsFileAggregationKindForAllowed: 0 }),
      fc('node.w1', { flowLogsFileAggregationKindForDenied: 3 }),
    ];
    assert.deepEqual(felixSettings(on, 'w1').flowLogs, { flushIntervalMs: 30_000, aggregationAllowed: 0, aggregationDenied: 3 });
    assert.throws(() => fc('default', { flowLogsFileAggregationKindForAllowed: 4 }), /spec\.flowLogsFileAggregationKindForAllowed/);
    assert.throws(() => fc('default', { flowLogsFlushInterval: '0.5s' }), /spec\.flowLogsFlushInterval/);
    assert.throws(() => fc('default', { flowLogsFileEnabled: 'yes' }), /spec\.flowLogsFileEnabled/);
  });

  it('flow logs: flowLogsConntrackMarkMask gives the Allow rules their conntrack mark bits; a mask not one run of 2 or more bits names the field', () => {
    const on = [fc('default', { flowLogsFileEnabled: true }), fc('node.w1', { flowLogsConntrackMarkMask: 0x00ff0000 })];
    assert.deepEqual(felixSettings(on, 'w1').flowLogs, { ctMark: 0x00ff0000 });
    assert.deepEqual(felixSettings(on, 'w2').flowLogs, {}, 'another node logs each allowed connection');
    assert.throws(
      () => fc('default', { flowLogsConntrackMarkMask: 0x00f0f000 }),
      /spec\.flowLogsConntrackMarkMask: 0xf0f000 is not one run of contiguous bits/,
    );
    assert.throws(
      () => fc('default', { flowLogsConntrackMarkMask: 0x100 }),
      /spec\.flowLogsConntrackMarkMask: 0x100 has fewer than 2 bits/,
    );
    assert.throws(() => fc('default', { flowLogsConntrackMarkMask: '0xff00' }), /spec\.flowLogsConntrackMarkMask/);
    assert.throws(() => fc('default', { flowLogsConntrackMarkMask: 2 ** 32 }), /spec\.flowLogsConntrackMarkMask/);
    assert.throws(() => fc('default', { flowLogsConntrackMarkMask: 0x80000000 }), /0x80000000 has fewer than 2 bits/);
    assert.equal(fc('default', { flowLogsConntrackMarkMask: 0xc0000000 }).spec.flowLogsConntrackMarkMask, 0xc0000000);
  });

  it('flow logs: flowLogsPoolsOnly has the kernel drop flows with no pool address; a non-boolean names the field', () => {
    const on = [fc('default', { flowLogsFileEnabled: true, flowLogsPoolsOnly: true }), fc('node.w2', { flowLogsPoolsOnly: false })];
    assert.deepEqual(felixSettings(on, 'w1').flowLogs, { poolsOnly: true });
    assert.deepEqual(felixSettings(on, 'w2').flowLogs, { poolsOnly: false }, "a node's own resource overrides the default");
    assert.throws(() => fc('default', { flowLogsPoolsOnly: 'true' }), /spec\.flowLogsPoolsOnly/);
  });

  it('routeRefreshInterval 0 turns the resync off; healthEnabled false closes the health port', () => {
    assert.deepEqual(felixSettings([fc('default', { routeRefreshInterval: '0', healthEnabled: false, healthPort: 9199 })], 'w1'), {
      felix: { resyncIntervalMs: 0 },
      healthPort: 0,
    });
  });

  it('WireGuard: enabled per family, and its knobs into felix; the keepalive in seconds; a node can turn it off for itself', () => {
    const configs = [
      fc('default', {
        wireguardEnabled: true,
        wireguardEnabledV6: true,
        wireguardListeningPort: 51830,
        wireguardListeningPortV6: 51831,
        wireguardInterfaceName: 'wg0',
        wireguardInterfaceNameV6: 'wg1',
        wireguardMTU: 1400,
        wireguardMTUV6: 0,
        wireguardRoutingRulePriority: 150,
        wireguardKeepAlive: '1m30s',
      }),
      fc('node.w2', { wireguardEnabled: false, wireguardEnabledV6: false }),
    ];
    assert.deepEqual(felixSettings(configs, 'w1'), {
      felix: {
        wireguard: {
          port: 51830,
          portV6: 51831,
          interfaceName: 'wg0',
          interfaceNameV6: 'wg1',
          mtu: 1400,
          mtuV6: 0,
          rulePriority: 150,
          keepAliveSeconds: 90,
        },
      },
      wireguard: { v4: true, v6: true },
    });
    assert.equal(felixSettings(configs, 'w2').wireguard, undefined, 'off on w2: no keys, no device');
    assert.deepEqual(felixSettings([fc('default', { wireguardEnabled: true })], 'w1'), { felix: {}, wireguard: { v4: true, v6: false } });
  });
});
