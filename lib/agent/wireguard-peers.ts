// The other nodes as felix's WireGuard peers, kept from one reconcile to the next: a peer is made
// again only for a Node or block list that changed, and compared by its fields, so a reconcile
// that changed nothing WireGuard reads (most: a pod, a Service, a peer's BGP state) costs two
// counter reads, and one Node's change a pass of pointer comparisons, never a build and a
// serialisation of the whole cluster.
import type { WireguardPeer } from '../../felix/index.js';
import type { IPAMBlock, Node } from '../resources/index.js';
import type { ClusterCache } from './cluster-cache.js';
import { nodeIpv4, nodeIpv6 } from './peers.js';

/** One node as felix's WireGuard peer: its addresses, published keys, device addresses and blocks. */
export function wireguardPeerOf(n: Node, blocks: readonly string[]): WireguardPeer {
  const v4 = nodeIpv4(n),
    v6 = nodeIpv6(n),
    st = n.spec.status,
    wg = n.spec.wireguard;
  return {
    name: n.metadata.name,
    ...(v4 ? { addressV4: v4 } : {}),
    ...(v6 ? { addressV6: v6 } : {}),
    ...(st?.wireguardPublicKey ? { publicKey: st.wireguardPublicKey } : {}),
    ...(st?.wireguardPublicKeyV6 ? { publicKeyV6: st.wireguardPublicKeyV6 } : {}),
    ...(wg?.interfaceIPv4Address ? { interfaceAddressV4: wg.interfaceIPv4Address } : {}),
    ...(wg?.interfaceIPv6Address ? { interfaceAddressV6: wg.interfaceIPv6Address } : {}),
    blocks,
  };
}

/** Blocks' CIDRs by the node they are affine to ("host:<name>"); blocks of no host are nobody's. */
export function blocksByNode(blocks: Iterable<IPAMBlock>): Map<string, string[]> {
  const byNode = new Map<string, string[]>();
  for (const b of blocks) {
    const owner = b.spec.affinity?.startsWith('host:') ? b.spec.affinity.slice(5) : undefined;
    if (owner === undefined) continue;
    const list = byNode.get(owner);
    if (list) list.push(b.spec.cidr);
    else byNode.set(owner, [b.spec.cidr]);
  }
  return byNode;
}

const NO_BLOCKS: readonly string[] = [];

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function samePeer(a: WireguardPeer, b: WireguardPeer): boolean {
  return (
    a.addressV4 === b.addressV4 &&
    a.addressV6 === b.addressV6 &&
    a.publicKey === b.publicKey &&
    a.publicKeyV6 === b.publicKeyV6 &&
    a.interfaceAddressV4 === b.interfaceAddressV4 &&
    a.interfaceAddressV6 === b.interfaceAddressV6 &&
    sameList(a.blocks, b.blocks)
  );
}

export class WireguardPeers {
  private nodesSeen = -1;
  private blocksSeen = -1;
  private owners = new Map<string, string[]>();
  private readonly byName = new Map<string, { node: Node; peer: WireguardPeer }>();
  private list: readonly WireguardPeer[] = [];

  /** The peers as of the last update, in the cache's order of Nodes. */
  get peers(): readonly WireguardPeer[] {
    return this.list;
  }

  /** Brings the peers up to the cache; true when any peer came, went or changed a field felix uses. */
  update(cache: ClusterCache, selfName: string): boolean {
    const nodesNow = cache.changes('Node'),
      blocksNow = cache.changes('IPAMBlock');
    if (nodesNow === this.nodesSeen && blocksNow === this.blocksSeen) return false;
    this.nodesSeen = nodesNow;
    if (blocksNow !== this.blocksSeen) {
      this.blocksSeen = blocksNow;
      this.owners = blocksByNode(cache.blocks.values());
    }
    let changed = false;
    let count = 0;
    for (const n of cache.nodes.values()) {
      const name = n.metadata.name;
      if (name === selfName) continue;
      count++;
      const had = this.byName.get(name);
      const blocks = this.owners.get(name) ?? NO_BLOCKS;
      if (had && had.node === n && sameList(had.peer.blocks, blocks)) continue;
      const peer = wireguardPeerOf(n, blocks);
      if (!had || !samePeer(had.peer, peer)) changed = true;
      this.byName.set(name, { node: n, peer: had && samePeer(had.peer, peer) ? had.peer : peer });
    }
    if (count !== this.byName.size) {
      // A node went (or this node's own entry is there from before its name was known).
      changed = true;
      for (const name of this.byName.keys()) if (name === selfName || !cache.nodes.has(name)) this.byName.delete(name);
    }
    if (changed) {
      const list: WireguardPeer[] = [];
      for (const n of cache.nodes.values()) {
        const e = this.byName.get(n.metadata.name);
        if (e && n.metadata.name !== selfName) list.push(e.peer);
      }
      this.list = list;
    }
    return changed;
  }
}
