// The dual-stack part of the CNI network configuration: which families an ADD asks for, and
// which pools serve each, in Calico's field names.
import assert from 'node:assert/strict';
import { CniError, parseNetConf } from '../../../lib/cni/index.js';
import { requestedFamilies } from '../../../lib/cni/plugin.js';
import { poolsForFamily } from '../../../lib/cni/pools.js';
import { API_VERSION, type IPPool } from '../../../lib/resources/index.js';

const conf = (ipam?: Record<string, unknown>) =>
  parseNetConf(JSON.stringify({ cniVersion: '1.0.0', name: 'k8s-pod-network', type: 'podroute-cni', ...(ipam ? { ipam } : {}) }));

const pool = (name: string, cidr: string): IPPool => ({
  apiVersion: API_VERSION,
  kind: 'IPPool',
  metadata: { name },
  spec: { cidr, blockSize: cidr.includes(':') ? 122 : 26, ipipMode: 'Never', vxlanMode: 'Never' },
});

describe('CNI netconf: address families and pools per family', () => {
  it('assigns IPv4 unless assign_ipv4 is "false" and IPv6 only when assign_ipv6 is "true", as Calico\'s calico-ipam', () => {
    assert.deepEqual(requestedFamilies(conf()), [4]);
    assert.deepEqual(requestedFamilies(conf({ type: 'calico-ipam' })), [4]);
    assert.deepEqual(requestedFamilies(conf({ type: 'calico-ipam', assign_ipv4: 'true', assign_ipv6: 'true' })), [4, 6]);
    assert.deepEqual(requestedFamilies(conf({ assign_ipv4: 'false', assign_ipv6: 'true' })), [6]);
    // JSON booleans mean the same as Calico's strings.
    assert.deepEqual(requestedFamilies(conf({ assign_ipv4: false, assign_ipv6: true })), [6]);
    assert.deepEqual(requestedFamilies(conf({ assign_ipv6: 'false' })), [4]);
  });

  it('refuses values and fields it does not know, naming them (error 7)', () => {
    const refused = (ipam: Record<string, unknown>, field: RegExp) =>
      assert.throws(
        () => conf(ipam),
        (e: unknown) => e instanceof CniError && e.code === 7 && field.test(e.message),
        JSON.stringify(ipam),
      );
    refused({ assign_ipv6: 'True' }, /ipam\.assign_ipv6: "True" must be "true" or "false"/);
    refused({ assign_ipv4: 1 }, /ipam\.assign_ipv4/);
    refused({ assign_ipv4: 'false' }, /ipam\.assign_ipv4: .*no address/);
    refused({ ipv4_pools: [1] }, /ipam\.ipv4_pools/);
    refused({ ipv6_pools: 'fd00::/120' }, /ipam\.ipv6_pools/);
    refused({ subnet: 'usePodCidr' }, /ipam\.subnet: unknown field/);
  });

  it("splits the pools by family: ipv4_pools/ipv6_pools by name or CIDR, podroute's pools by each pool's CIDR", () => {
    const pools = [pool('blue4', '10.90.0.0/24'), pool('blue6', 'fd00:5a::/120'), pool('red6', 'fd00:5b::/120')];
    const c = conf({ ipv4_pools: ['10.90.0.0/24'], ipv6_pools: ['fd00:5b:0::/120', 'blue6'] });
    assert.deepEqual(poolsForFamily(c.ipam, 4, pools), ['blue4']);
    assert.deepEqual(poolsForFamily(c.ipam, 6, pools), ['red6', 'blue6']);
    // A CIDR no pool has stays as written, for IPAM to refuse by that name.
    assert.deepEqual(poolsForFamily(conf({ ipv6_pools: ['fd00:99::/120'] }).ipam, 6, pools), ['fd00:99::/120']);
    const mixed = conf({ pools: ['red6', 'blue4', 'gone'] });
    assert.deepEqual(poolsForFamily(mixed.ipam, 4, pools), ['blue4', 'gone']);
    assert.deepEqual(poolsForFamily(mixed.ipam, 6, pools), ['red6', 'gone']);
    // No pool named for a family: the node's pools of that family (nodeSelector) decide.
    assert.equal(poolsForFamily(conf({ pools: ['blue4'] }).ipam, 6, pools), undefined);
    assert.equal(poolsForFamily(conf().ipam, 4, pools), undefined);
  });
});
