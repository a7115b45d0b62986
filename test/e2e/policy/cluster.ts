// The policy matrix's cluster: policy.clab.yml brought up by the lab runner in namespaces of
// our own prefix and PID, pods made through podroute-cni (what `podroute lab pod add` does, by
// its own function), policies written with `podroute apply -f` against the lab's Redis (the
// CLI's function too: no process start per call), and the cluster's state mirrored as a Model
// for the reference evaluators.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { runDatastoreCommand } from '../../../lib/cli/datastore.js';
import { type BackendDatastore, redisDatastore } from '../../../lib/datastore/index.js';
import { namespaceApply, parseLabelChanges, parseLabels, parsePortList, podAdd, podLabel } from '../../../lib/lab/pods.js';
import { labDown, labUp } from '../../../lib/lab/runner.js';
import type { LabState } from '../../../lib/lab/state.js';
import { execCommand, isOurs, run } from '../../../lib/lab/system.js';
import { loadTopology, type Topology } from '../../../lib/lab/topology.js';
import { type Labels, type ModelNamespace, type ModelPod, SERVED_PORTS } from '../../support/policy/model.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));

/**
 * What the lab runner can do here. Pods in Kubernetes namespaces with labels came with the
 * policy work (`lab pod add … --namespace NS --labels k=v`); without them a pod x/a is made as
 * pod "x-a" and carries no labels, which is enough to probe, not to select.
 */

export interface ApplyResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A resource as `podroute apply` reads it: apiVersion, kind, metadata, spec. */
export interface ResourceDoc {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly labels?: Labels };
  readonly spec?: unknown;
}

export class PolicyCluster {
  readonly topo: Topology = loadTopology(join(HERE, 'policy.clab.yml'));
  readonly prefix = `pm${process.pid}-`;
  readonly stateRoot = mkdtempSync(join(tmpdir(), 'pmlab-'));
  state!: LabState;
  private store?: BackendDatastore;
  readonly namespaces = new Map<string, ModelNamespace>();
  /** By "namespace/name". */
  readonly pods = new Map<string, ModelPod & { node: string; netns: string }>();

  async up(): Promise<void> {
    this.state = await labUp(this.topo, { stateRoot: this.stateRoot, prefix: this.prefix });
    this.store = await redisDatastore({ url: this.state.redisSocket! });
  }

  /** Takes the lab down and checks that no namespace or process of it remains. */
  async down(): Promise<void> {
    await this.store?.close();
    this.store = undefined;
    const recorded = this.state?.processes ?? [];
    await labDown(this.topo.name, { stateRoot: this.stateRoot });
    rmSync(this.stateRoot, { recursive: true, force: true });
    const left = (await run(['ip', 'netns', 'list'])).split('\n').filter((l) => l.startsWith(this.prefix));
    assert.deepEqual(left, [], 'namespaces left behind');
    assert.deepEqual(
      recorded.filter((p) => isOurs(p)).map((p) => `${p.node}/${p.what}:${p.pid}`),
      [],
      'processes left behind',
    );
  }

  nodeNetns(node: string): string {
    return `${this.prefix}${node}`;
  }

  /** `podroute <args>` against the lab's datastore, through the CLI's own function (no process start per call). */
  async podroute(args: string[], stdin?: string): Promise<ApplyResult> {
    let stdout = '';
    let stderr = '';
    const code = await runDatastoreCommand(
      args,
      { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s), readStdin: () => stdin ?? '' },
      this.store,
    );
    return { code, stdout, stderr };
  }

  /** `podroute apply -f -` with these documents; the raw outcome (bad-input cases read it). */
  applyRaw(docs: readonly ResourceDoc[]): Promise<ApplyResult> {
    return this.podroute(['apply', '-f', '-'], docs.map((d) => stringify(d)).join('---\n'));
  }

  async apply(docs: readonly ResourceDoc[]): Promise<void> {
    if (docs.length === 0) return;
    const r = await this.applyRaw(docs);
    if (r.code !== 0) throw new Error(`podroute apply failed (${r.code}): ${r.stderr}${r.stdout}`);
  }

  /** `podroute delete <kind> <namespace/name>` for each document. */
  async delete(docs: readonly ResourceDoc[]): Promise<void> {
    for (const d of docs) {
      const key = d.metadata.namespace ? `${d.metadata.namespace}/${d.metadata.name}` : d.metadata.name;
      const r = await this.podroute(['delete', cliKind(d), key]);
      if (r.code !== 0) throw new Error(`podroute delete ${cliKind(d)} ${key} failed (${r.code}): ${r.stderr}${r.stdout}`);
    }
  }

  /**
   * A Kubernetes namespace with these labels (created or relabelled), as `podroute lab namespace`
   * writes it: the command's own function, given the labels as the command line gives them (no
   * process start per call; test/e2e/lab runs the command itself). The model adds
   * kubernetes.io/metadata.name, which Kubernetes sets on every namespace.
   */
  async namespace(name: string, labels: Labels): Promise<void> {
    await namespaceApply(this.state, name, parseLabels(labelArg(labels)));
    this.namespaces.set(name, { name, labels: { ...labels, 'kubernetes.io/metadata.name': name } });
  }

  /**
   * A pod through podroute-cni on `node`, serving SERVED_PORTS under their names, as `podroute lab
   * pod add` makes it (its own function, labels and ports as the command line gives them); returns
   * it as the model sees it.
   */
  async pod(node: string, namespace: string, name: string, labels: Labels): Promise<ModelPod & { node: string; netns: string }> {
    const ports = SERVED_PORTS.map((p) => `${p.name}=${p.containerPort}/${p.protocol}`).join(',');
    const made = await podAdd(this.state, node, name, { namespace, labels: parseLabels(labelArg(labels)), ports: parsePortList(ports) });
    if (!made.ip) throw new Error(`pod ${namespace}/${name} on ${node} has no address`);
    const pod = { namespace, name, labels: { ...labels }, ip: made.ip, ports: SERVED_PORTS, node, netns: made.namespace };
    this.pods.set(`${namespace}/${name}`, pod);
    return pod;
  }

  /** Gives a pod exactly these labels, as `podroute lab pod label ns/name k=v,…,gone-` does. */
  async labelPod(namespace: string, name: string, labels: Labels): Promise<void> {
    const p = this.pods.get(`${namespace}/${name}`)!;
    const changes = [
      ...Object.entries(labels).map(([k, v]) => `${k}=${v}`),
      ...Object.keys(p.labels)
        .filter((k) => !(k in labels))
        .map((k) => `${k}-`),
    ];
    await podLabel(this.state, `${namespace}/${name}`, parseLabelChanges(changes.join(',')));
    this.pods.set(`${namespace}/${name}`, { ...p, labels: { ...labels } });
  }

  /** The pods, in the matrix's order (as created). */
  modelPods(): ModelPod[] {
    return [...this.pods.values()];
  }

  /** The last lines of every agent's log that mention `word`: why a node does not enforce. */
  agentLog(word: string, lines = 6): string {
    return this.state.processes
      .filter((p) => p.what === 'agent')
      .map((p) => {
        let text = '';
        try {
          text = readFileSync(p.log, 'utf8');
        } catch {
          text = '(no log)';
        }
        const hits = text.split('\n').filter((l) => l.toLowerCase().includes(word.toLowerCase()));
        return `${p.node}:\n${hits.slice(-lines).join('\n') || '(nothing)'}`;
      })
      .join('\n');
  }

  /** Whether felix enforces policy on this node: its table exists in the node's namespace. */
  async enforces(node: string): Promise<boolean> {
    const r = await execCommand(['ip', 'netns', 'exec', this.nodeNetns(node), 'nft', 'list', 'table', 'inet', 'podroute']);
    return r.code === 0;
  }
}

/** k=v,k2=v2, as the lab commands take labels. */
export function labelArg(labels: Labels): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** The kind name `podroute delete` takes for a document: Kubernetes' NetworkPolicy is stored as KubernetesNetworkPolicy. */
export function cliKind(d: ResourceDoc): string {
  if (d.apiVersion === 'networking.k8s.io/v1' && d.kind === 'NetworkPolicy') return 'kubernetesnetworkpolicy';
  return d.kind.toLowerCase();
}
