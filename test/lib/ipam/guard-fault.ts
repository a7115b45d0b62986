// The store-identity guard's fault, the same on every store: pods take addresses through guarded
// IPAM, the store comes back empty and the cluster writes its pool and Nodes again. Guarded IPAM
// must refuse until `ipam repair` has rebuilt the allocations from the re-applied
// WorkloadEndpoints, and afterwards hand out each address of the pool once.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { parseCidr } from '../../../ip/index.js';
import type { BackendDatastore } from '../../../lib/datastore/index.js';
import { fileIdentityRecord, Ipam, IpamError, type IpamRepairReport, repairIpam } from '../../../lib/ipam/index.js';
import { waitFor } from '../../support/wait.js';
import { API_VERSION, type IPPool, type WorkloadEndpoint } from '../../../lib/resources/index.js';

export class GuardFault {
  /** Every address a pod holds, or was handed out after repair. */
  readonly held = new Set<string>();
  readonly weps: WorkloadEndpoint[] = [];
  readonly pool: IPPool;

  /**
   * Pods go to `nodes` in turn; each allocates through `ipamOf(node)`, by default a new Ipam
   * whose identity record is a file in `dir` (the CNI plugin's way).
   */
  constructor(
    private readonly ds: BackendDatastore,
    private readonly dir: string,
    cidr: string,
    private readonly nodes: readonly string[],
    private readonly ipamOf?: (node: string) => Ipam,
  ) {
    this.pool = {
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'p' },
      spec: { cidr, blockSize: 28, ipipMode: 'Never', vxlanMode: 'Never' },
    };
  }

  /** How many addresses the pool has. */
  get size(): number {
    return 2 ** (32 - parseCidr(this.pool.spec.cidr).prefixLength);
  }

  guarded(node: string): Ipam {
    return this.ipamOf?.(node) ?? new Ipam(this.ds, { identity: fileIdentityRecord(join(this.dir, `${node}.json`)) });
  }

  /** The pool and the Nodes, as the cluster writes them (and writes them again into an empty store). */
  async applyCluster(): Promise<void> {
    await this.ds.apply(this.pool);
    for (const name of this.nodes) await this.ds.apply({ apiVersion: API_VERSION, kind: 'Node', metadata: { name }, spec: {} });
  }

  /** `count` pods, each addressed by guarded IPAM on its node, its WorkloadEndpoint stored. */
  async startPods(count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const node = this.nodeOf(i);
      const a = await this.guarded(node).autoAssign({ handle: `c${i}`, node });
      this.held.add(a.ip);
      const wep: WorkloadEndpoint = {
        apiVersion: API_VERSION,
        kind: 'WorkloadEndpoint',
        metadata: { name: `${node}-k8s-pod${i}-eth0`, namespace: 'default', annotations: { 'podroute.io/container-id': `c${i}` } },
        spec: { node, pod: `pod${i}`, workload: `c${i}`, interfaceName: `cali${i}`, ipNetworks: [`${a.ip}/32`] },
      };
      this.weps.push(wep);
      await this.ds.apply(wep);
    }
    assert.equal(this.held.size, count, 'each pod got its own address');
  }

  /** Waits (bounded) for the restarted store to answer with no identity: it came back empty. */
  async untilEmpty(timeoutMs: number): Promise<void> {
    await waitFor(() => this.ds.raw.identity(), {
      what: 'the restarted store to answer, empty (no store id)',
      until: (id) => id.storeId === null,
      timeoutMs,
      intervalMs: 100,
    });
  }

  /** Guarded IPAM on the first node refuses, and says why and what to run. */
  async assertRefused(): Promise<void> {
    const node = this.nodes[0]!;
    await assert.rejects(
      this.guarded(node).autoAssign({ handle: 'c-refused', node }),
      (e: unknown) => e instanceof IpamError && e.code === 'StoreReplaced' && /was replaced.*ipam repair/.test(e.message),
    );
  }

  /** The orchestrator re-applies the pods' endpoints; repair rebuilds the allocations from them. */
  async repair(): Promise<IpamRepairReport> {
    for (const w of this.weps) await this.ds.apply({ ...w, metadata: { ...w.metadata, resourceVersion: undefined } });
    const report = await repairIpam(this.ds);
    assert.equal(report.addresses, this.weps.length);
    assert.deepEqual(report.conflicts, []);
    return report;
  }

  /** Guarded IPAM until the pool is exhausted: no address may be one a pod holds, and all are handed out. */
  async allocateTheRest(): Promise<void> {
    for (let i = this.weps.length; i < this.size + this.weps.length; i++) {
      const node = this.nodeOf(i);
      let ip: string;
      try {
        ip = (await this.guarded(node).autoAssign({ handle: `after-${i}`, node })).ip;
      } catch (e) {
        if (e instanceof IpamError && e.code === 'Exhausted') break;
        throw e;
      }
      assert.ok(!this.held.has(ip), `${ip} is held by a pod already`);
      this.held.add(ip);
    }
    assert.equal(this.held.size, this.size, `the whole ${this.pool.spec.cidr} was handed out, each address once`);
  }

  private nodeOf(i: number): string {
    return this.nodes[i % this.nodes.length]!;
  }
}
