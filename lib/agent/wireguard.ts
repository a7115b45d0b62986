// This node's WireGuard identity, per family, as Calico's node keeps it: a key pair made here
// (the private key in a 0600 file in the agent's state folder, never written anywhere else), its
// public key published in the Node's status, and the device's address taken from IPAM (from one
// of the node's own blocks) and published in spec.wireguard. A key file that is gone is a lost
// key: the folder is watched (inotify), so the moment the file goes a new pair is made, written
// and published, and the other nodes follow. It also turns the cluster as cached into felix's
// WireguardInput: every other node's addresses, keys and blocks.
import { existsSync, type FSWatcher, readFileSync, watch } from 'node:fs';
import { join } from 'node:path';
import {
  generateWireguardKeyPair,
  isWireguardKey,
  wireguardPublicKey,
  type WireguardInput,
  type WireguardKeyPair,
  type WireguardLocal,
  type WireguardPeer,
} from '../../felix/index.js';
import type { BackendDatastore } from '../datastore/index.js';
import { writePrivateFile } from '../files/index.js';
import type { Ipam } from '../ipam/index.js';
import type { IPAMBlock, IPPool, Node } from '../resources/index.js';
import { blocksByNode, wireguardPeerOf } from './wireguard-peers.js';

type Family = 4 | 6;

const FAMILIES = {
  4: { file: 'wireguard.key', key: 'wireguardPublicKey', address: 'interfaceIPv4Address', handle: 'wireguard-tunnel-addr-' },
  6: { file: 'wireguard-v6.key', key: 'wireguardPublicKeyV6', address: 'interfaceIPv6Address', handle: 'wireguard-v6-tunnel-addr-' },
} as const;

/** The IPAM handle of a node's WireGuard device address of one family (Calico's spelling). */
export function wireguardHandle(node: string, family: Family = 4): string {
  return `${FAMILIES[family].handle}${node}`;
}

export interface WireguardKeeperOptions {
  nodeName: string;
  datastore: BackendDatastore;
  ipam: Ipam;
  /** The folder the key files live in (made 0755 if missing, refused if another user could write it). */
  stateDir: string;
  /** wireguardEnabled / wireguardEnabledV6. */
  enabled: { v4: boolean; v6: boolean };
  log: (event: string, fields: Record<string, unknown>) => void;
  /** A datastore call failed (the next reconcile tries again). */
  onDatastoreError: () => void;
  /**
   * Asks the agent to reconcile (and so publish, and give felix the key): a key file was found
   * missing and replaced, or a reconcile came while a publication was under way.
   */
  reconcile?: () => void;
}

export class WireguardKeeper {
  private readonly keys = new Map<Family, WireguardKeyPair>();
  private pending = false;
  /** ensure() was called while a publication was under way: run once more after it. */
  private again = false;
  private folderWatch: FSWatcher | undefined;
  private closed = false;

  constructor(private readonly options: WireguardKeeperOptions) {}

  get enabled(): boolean {
    return this.options.enabled.v4 || this.options.enabled.v6;
  }

  private families(): Family[] {
    const { v4, v6 } = this.options.enabled;
    return [...(v4 ? [4 as const] : []), ...(v6 ? [6 as const] : [])];
  }

  private keyFile(family: Family): string {
    return join(this.options.stateDir, FAMILIES[family].file);
  }

  /**
   * The family's key pair: the one in its file, or a new one written there when the file is
   * missing or unreadable as a key (a lost key is replaced, never reused from memory: the file
   * is what says which key this node has).
   */
  keyPair(family: Family): WireguardKeyPair {
    const file = this.keyFile(family);
    const held = this.keys.get(family);
    if (held && existsSync(file)) return held;
    let privateKey: string | undefined;
    try {
      const text = readFileSync(file, 'utf8').trim();
      if (isWireguardKey(text)) privateKey = text;
    } catch {
      // No file: a new key below.
    }
    let pair: WireguardKeyPair;
    if (privateKey) pair = { privateKey, publicKey: wireguardPublicKey(privateKey) };
    else {
      pair = generateWireguardKeyPair();
      writePrivateFile(file, `${pair.privateKey}\n`, 'the WireGuard key folder');
      this.options.log('wireguard-key-created', { family, publicKey: pair.publicKey, replaced: held?.publicKey });
    }
    this.keys.set(family, pair);
    this.watchFolder();
    return pair;
  }

  /**
   * Watches the key folder once a key is held: a held key whose file went is replaced there and
   * then (not at the next datastore change), and the agent reconciles to publish it.
   */
  private watchFolder(): void {
    if (this.folderWatch || this.closed) return;
    const o = this.options;
    try {
      this.folderWatch = watch(o.stateDir, { persistent: false }, () => this.checkKeyFiles());
      this.folderWatch.on('error', (e) => {
        // The folder itself went: the next reconcile finds the key missing and watches again.
        o.log('wireguard-error', { error: `watching ${o.stateDir}: ${e.message}` });
        this.folderWatch?.close();
        this.folderWatch = undefined;
      });
    } catch (e) {
      o.log('wireguard-error', { error: `watching ${o.stateDir}: ${(e as Error).message}` });
    }
  }

  private checkKeyFiles(): void {
    if (this.closed) return;
    let replaced = false;
    for (const family of this.families()) {
      if (!this.keys.has(family) || existsSync(this.keyFile(family))) continue;
      try {
        this.keyPair(family);
        replaced = true;
      } catch (e) {
        this.options.log('wireguard-error', { family, error: (e as Error).message });
      }
    }
    if (replaced) this.options.reconcile?.();
  }

  /** Stops watching the key folder. */
  close(): void {
    this.closed = true;
    this.folderWatch?.close();
    this.folderWatch = undefined;
  }

  /**
   * Keys made or read, the device addresses taken, and both published on the Node when it does
   * not show them; a family turned off has its public key taken off the Node, so the others
   * stop encrypting to it, and its device address released to IPAM and taken off the Node. One
   * attempt at a time.
   */
  async ensure(self: Node, pools: Iterable<IPPool>): Promise<void> {
    if (this.pending) {
      this.again = true;
      return;
    }
    const o = this.options;
    const wanted: { family: Family; key: string }[] = [];
    for (const family of this.families()) {
      if (family === 6 && !self.spec.bgp?.ipv6Address) continue;
      try {
        wanted.push({ family, key: this.keyPair(family).publicKey });
      } catch (e) {
        o.log('wireguard-error', { family, error: (e as Error).message });
      }
    }
    const published = (n: Node, family: Family) => n.spec.status?.[FAMILIES[family].key];
    const addressOf = (n: Node, family: Family) => n.spec.wireguard?.[FAMILIES[family].address];
    const on = this.families();
    const stale = (n: Node) =>
      wanted.some((w) => published(n, w.family) !== w.key || !addressOf(n, w.family)) ||
      ([4, 6] as const).some((f) => published(n, f) !== undefined && !wanted.some((w) => w.family === f)) ||
      ([4, 6] as const).some((f) => !on.includes(f) && addressOf(n, f) !== undefined);
    if (!stale(self)) return;
    this.pending = true;
    try {
      const current = (await o.datastore.get('Node', o.nodeName)) ?? self;
      if (!stale(current)) return;
      const addresses: Partial<Record<Family, string>> = {};
      for (const { family } of wanted) {
        const had = addressOf(current, family);
        if (had) addresses[family] = had;
        else {
          const pool = [...pools].find((p) => !p.spec.disabled && (p.spec.cidr.includes(':') ? 6 : 4) === family);
          if (!pool) continue;
          const got = await o.ipam.autoAssign({
            handle: wireguardHandle(o.nodeName, family),
            node: o.nodeName,
            family,
            pools: [pool.metadata.name],
            attrs: { type: 'wireguardTunnelAddress' },
          });
          addresses[family] = got.ip;
          o.log('wireguard-interface-address', { family, address: got.ip });
        }
      }
      // A family turned off gives its device address back to IPAM, as Calico does; released
      // before the Node is written, so a failed write is retried rather than leaving it held.
      const released: Family[] = [];
      for (const f of [4, 6] as const) {
        if (on.includes(f) || addressOf(current, f) === undefined) continue;
        const ips = await o.ipam.releaseByHandle(wireguardHandle(o.nodeName, f));
        released.push(f);
        o.log('wireguard-interface-address-released', { family: f, address: addressOf(current, f), released: ips });
      }
      // Read again just before the write: apply replaces the whole Node, and IPAM took a while.
      const latest = (await o.datastore.get('Node', o.nodeName)) ?? current;
      const status = { ...latest.spec.status };
      const wireguard = { ...latest.spec.wireguard };
      for (const f of [4, 6] as const) {
        const w = wanted.find((x) => x.family === f);
        if (w) status[FAMILIES[f].key] = w.key;
        else delete status[FAMILIES[f].key];
        const a = addresses[f];
        if (a) wireguard[FAMILIES[f].address] = a;
        if (released.includes(f)) delete wireguard[FAMILIES[f].address];
      }
      const { status: _s, wireguard: _w, ...rest } = latest.spec;
      await o.datastore.apply({
        ...latest,
        metadata: { ...latest.metadata, resourceVersion: undefined },
        spec: {
          ...rest,
          ...(Object.keys(wireguard).length > 0 ? { wireguard } : {}),
          ...(Object.keys(status).length > 0 ? { status } : {}),
        },
      });
      o.log('wireguard-published', { publicKey: status.wireguardPublicKey, publicKeyV6: status.wireguardPublicKeyV6 });
    } catch (e) {
      o.onDatastoreError();
      o.log('wireguard-error', { error: (e as Error).message });
    } finally {
      this.pending = false;
      if (this.again) {
        this.again = false;
        o.reconcile?.();
      }
    }
  }

  /**
   * Felix's WireGuard input: this node's private keys (those ensure() read or made) and every
   * other node as the cache has it; undefined when WireGuard is off here. Builds every peer: the
   * agent keeps its peers from one reconcile to the next (WireguardPeers) and calls inputWith.
   */
  input(self: Node, nodes: Iterable<Node>, blocks: Iterable<IPAMBlock>): WireguardInput | undefined {
    if (!this.enabled) return undefined;
    const owners = blocksByNode(blocks);
    const peers: WireguardPeer[] = [];
    for (const n of nodes) if (n.metadata.name !== self.metadata.name) peers.push(wireguardPeerOf(n, owners.get(n.metadata.name) ?? []));
    return this.inputWith(self, peers);
  }

  /** Felix's WireGuard input with these peers; undefined when WireGuard is off here. */
  inputWith(self: Node, peers: readonly WireguardPeer[]): WireguardInput | undefined {
    if (!this.enabled) return undefined;
    const v4 = this.local(self, 4),
      v6 = this.local(self, 6);
    return { ...(v4 ? { v4 } : {}), ...(v6 ? { v6 } : {}), peers };
  }

  /** This node's side of a family: its private key and device address, once it has a key. */
  local(self: Node, family: Family): WireguardLocal | undefined {
    if (!this.families().includes(family)) return undefined;
    const pair = this.keys.get(family);
    if (!pair) return undefined;
    const address = self.spec.wireguard?.[FAMILIES[family].address];
    return { privateKey: pair.privateKey, ...(address ? { interfaceAddress: address } : {}) };
  }
}
