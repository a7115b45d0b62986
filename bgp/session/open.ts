// Our OPEN, from the local and peer configuration.
import { AS_TRANS, Safi, afiOf, type AddressFamily, type Capability, type OpenMessage } from '../codec/index.js';
import { longLivedStaleTime, peerFamilies, type LocalConfig, type PeerConfig } from './config.js';

const ADD_PATH_MODE = { receive: 1, send: 2, both: 3 } as const;

export function buildOpen(local: LocalConfig, peer: PeerConfig, holdTime: number): OpenMessage {
  const asn = peer.localAs ?? local.asn;
  const families = peerFamilies(peer);
  const caps: Capability[] = families.map((f) => ({ kind: 'multiprotocol', afi: afiOf(f), safi: Safi.UNICAST }));
  caps.push({ kind: 'route-refresh' }, { kind: 'enhanced-route-refresh' });
  if (peer.extendedMessage !== false) caps.push({ kind: 'extended-message' });
  if (peer.gracefulRestart !== false) {
    caps.push({
      kind: 'graceful-restart',
      restartFlags: local.restarting ? 0x8 : 0,
      // A peer's own restart time (Calico's maxRestartTime) wins over the speaker's.
      restartTime: Math.min(
        (typeof peer.gracefulRestart === 'object' ? peer.gracefulRestart.restartTime : undefined) ?? local.restartTime ?? 120,
        4095,
      ),
      families: families.map((f) => ({ afi: afiOf(f), safi: Safi.UNICAST, flags: local.forwardingPreserved ? 0x80 : 0 })),
    });
    const staleTime = longLivedStaleTime(peer);
    if (staleTime !== undefined) {
      caps.push({
        kind: 'long-lived-graceful-restart',
        families: families.map((f) => ({ afi: afiOf(f), safi: Safi.UNICAST, flags: local.forwardingPreserved ? 0x80 : 0, staleTime })),
      });
    }
  }
  caps.push({ kind: 'four-octet-as', asn });
  const addPath = Object.entries(peer.addPath ?? {}).filter(([f]) => families.includes(f as AddressFamily));
  if (addPath.length) {
    caps.push({
      kind: 'add-path',
      families: addPath.map(([f, m]) => ({ afi: afiOf(f as AddressFamily), safi: Safi.UNICAST, mode: ADD_PATH_MODE[m!] })),
    });
  }
  if (local.hostname) caps.push({ kind: 'fqdn', hostname: local.hostname.slice(0, 64), domain: '' });
  return {
    type: 'open',
    version: 4,
    myAs: asn > 0xffff ? AS_TRANS : asn,
    holdTime,
    bgpId: local.routerId,
    capabilities: caps,
  };
}
