// Agents with WireGuard on, in one process with the memory datastore: each publishes its key
// and device address, each felix gets the others as peers with their blocks, a node with
// WireGuard off is nobody's peer, and a lost key file is a new key the others follow.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryWireguardDataplane } from '../../../felix/index.js';
import { freePort } from '../../../bgp/session/free-port.js';
import { memoryDatastore, type BackendDatastore } from '../../../lib/datastore/index.js';
import { Ipam } from '../../../lib/ipam/index.js';
import { API_VERSION } from '../../../lib/resources/index.js';
import { waitFor } from '../../support/wait.js';
import { TestCluster } from './cluster.js';

describe('node agent WireGuard (memory datastore)', function () {
  this.timeout(60_000);
  let ds: BackendDatastore;
  let cluster: TestCluster;
  let dir: string;
  const wg = new Map<string, MemoryWireguardDataplane>();

  beforeEach(async () => {
    ds = memoryDatastore();
    dir = mkdtempSync(join(tmpdir(), 'agent-wg-'));
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'p' },
      spec: { cidr: '10.70.0.0/16', blockSize: 26, ipipMode: 'Never', vxlanMode: 'Never' },
    });
    cluster = new TestCluster(ds, await freePort());
  });
  afterEach(async () => {
    await cluster.stop();
    await ds.close();
    rmSync(dir, { recursive: true, force: true });
    wg.clear();
  });

  const add = (name: string, index: number, on: boolean) => {
    const dp = new MemoryWireguardDataplane();
    wg.set(name, dp);
    return cluster.add(name, index, {
      wireguard: { v4: on, v6: false },
      stateDir: join(dir, name),
      felix: { resyncIntervalMs: 0, sysctls: false, wireguardDataplane: dp },
    });
  };
  const peers = (name: string) =>
    [...(wg.get(name)?.devices.get('wireguard.cali')?.peers.values() ?? [])].map((p) => ({ key: p.publicKey, endpoint: p.endpoint }));
  const published = async (name: string) => (await ds.get('Node', name))?.spec.status?.wireguardPublicKey;

  it('each node publishes its key; the others peer with it at its address; a node with WireGuard off is reached in clear', async () => {
    await add('n1', 1, true);
    await add('n2', 2, true);
    await add('n3', 3, false);
    const k1 = await waitFor(() => published('n1'), { what: 'n1 key published', until: (k) => k !== undefined });
    const k2 = await waitFor(() => published('n2'), { what: 'n2 key published', until: (k) => k !== undefined });
    await waitFor(() => peers('n2'), {
      what: 'n2 peers with n1',
      until: (p) => p.length === 1 && p[0]?.key === k1 && p[0]?.endpoint === '127.0.0.1:51820',
    });
    await waitFor(() => peers('n1'), { what: 'n1 peers with n2', until: (p) => p.length === 1 && p[0]?.key === k2 });
    assert.equal(await published('n3'), undefined, 'n3 publishes no key');
    assert.equal(wg.get('n3')?.devices.size, 0, 'n3 has no device');
    const n1 = await ds.get('Node', 'n1');
    const address = n1?.spec.wireguard?.interfaceIPv4Address ?? '';
    const [block] = await new Ipam(ds).blocksForNode('n1');
    const allowed = [...(wg.get('n2')?.devices.get('wireguard.cali')?.peers.values() ?? [])][0]?.allowedIps ?? [];
    assert.deepEqual([...allowed].sort(), [block?.cidr, `${address}/32`].sort(), "n1's block and device address");
    assert.ok([...(wg.get('n2')?.tables.get('4|1')?.keys() ?? [])].includes(block?.cidr ?? '?'), "n2 routes n1's block through its device");
  });

  it('a lost key file: a new key as soon as it goes (no datastore change needed), and the others follow', async () => {
    await add('n1', 1, true);
    await add('n2', 2, true);
    const k1 = await waitFor(() => published('n1'), { what: 'n1 key', until: (k) => k !== undefined });
    await waitFor(() => peers('n2'), { what: 'n2 peers with n1', until: (p) => p[0]?.key === k1 });
    rmSync(join(dir, 'n1', 'wireguard.key'));
    const k1b = await waitFor(() => published('n1'), { what: 'a new n1 key', until: (k) => k !== undefined && k !== k1 });
    await waitFor(() => peers('n2'), { what: 'n2 follows the new key', until: (p) => p.length === 1 && p[0]?.key === k1b });
    assert.equal(wg.get('n1')?.devices.get('wireguard.cali')?.spec.privateKey.length, 44, 'n1 device has its new key');
  });
});
