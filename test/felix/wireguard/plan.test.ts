// Desired WireGuard state against the kernel's: only what differs is written.
import assert from 'node:assert/strict';
import { planPeers, planRules, planTableRoutes, type InstalledPeer, type WireguardPeerSpec } from '../../../felix/index.js';

const peer = (key: string, allowedIps: string[], endpoint = '10.0.0.2:51820', keepAliveSeconds = 0): WireguardPeerSpec => ({
  publicKey: key,
  endpoint,
  allowedIps,
  keepAliveSeconds,
});
const installed = (p: WireguardPeerSpec): InstalledPeer => ({ ...p, latestHandshake: 0 });

describe('felix WireGuard plans', () => {
  it('peers: equal ones untouched (allowed IPs in any order), new and changed set, gone removed', () => {
    const same = peer('A', ['10.65.1.0/26', '10.65.1.1/32']);
    const moved = peer('B', ['10.65.2.0/26'], '10.0.0.3:51820');
    const grown = peer('C', ['10.65.3.0/26', '10.65.7.0/26']);
    const added = peer('D', ['10.65.4.0/26']);
    const plan = planPeers(
      [same, moved, grown, added],
      [
        installed({ ...same, allowedIps: ['10.65.1.1/32', '10.65.1.0/26'] }),
        installed({ ...moved, endpoint: '10.0.0.9:51820' }),
        installed({ ...grown, allowedIps: ['10.65.3.0/26'] }),
        installed(peer('OLD', ['10.65.5.0/26'])),
      ],
    );
    assert.deepEqual(
      plan.set.map((p) => p.publicKey),
      ['B', 'C', 'D'],
    );
    assert.deepEqual(plan.remove, ['OLD']);
  });

  it('peers: a keepalive change is a change', () => {
    const plan = planPeers([peer('A', ['10.65.1.0/26'], undefined, 25)], [installed(peer('A', ['10.65.1.0/26']))]);
    assert.equal(plan.set.length, 1);
  });

  it('table routes: replace what is missing or through another device, delete what is no longer wanted', () => {
    const writes = planTableRoutes(
      [
        { dst: '10.65.1.0/26', dev: 'wireguard.cali' },
        { dst: '10.65.2.0/26', dev: 'wireguard.cali' },
        { dst: '10.65.3.0/26', dev: 'wireguard.cali' },
      ],
      [
        { dst: '10.65.1.0/26', dev: 'wireguard.cali' },
        { dst: '10.65.2.0/26', dev: 'wg0' },
        { dst: '10.65.9.0/26', dev: 'wireguard.cali' },
      ],
    );
    assert.deepEqual(
      writes.map((w) => `${w.op} ${w.route.dst}`),
      ['replace 10.65.2.0/26', 'replace 10.65.3.0/26', 'delete 10.65.9.0/26'],
    );
  });

  it('rules: the wanted one added once; ours at another priority removed; other marks left alone', () => {
    const want = { family: 4 as const, priority: 99, table: 1, fwmark: 0x100000 };
    assert.deepEqual(planRules(want, [want], 0x100000), { remove: [] }, 'present: nothing to do');
    const old = { ...want, priority: 150 };
    const foreign = { ...want, priority: 50, fwmark: 0x4000 };
    assert.deepEqual(planRules(want, [old, foreign], 0x100000), { add: want, remove: [old] });
    assert.deepEqual(planRules(undefined, [want, foreign], 0x100000), { remove: [want] }, 'WireGuard off: ours go');
  });
});
