// The NetworkPolicy probe matrix with real packets: a two-node lab, namespaces x, y, z with
// pods a, b, c made through podroute-cni and spread over both nodes, every pod probing every
// pod on TCP 80, TCP 81 and UDP 80. For each case the policies go in with `podroute apply`,
// and the measured truth table must equal what the reference evaluators compute from the
// Kubernetes and Calico semantics; when it does not, both tables are printed.
//
// `podroute node run` enforces policy by default (test/ensure-deps.sh installs nft), so the
// enforcing cases always run; PODROUTE_POLICY_E2E=0 skips them on purpose. A node whose kernel
// never gets `table inet podroute` fails them, quoting what its agent said. The no-policy matrix
// and the prober's own check prove the probes on real packets.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execCommand, run } from '../../../lib/lab/system.js';
import { sleep, waitFor } from '../../support/wait.js';
import { callControl } from '../../../lib/bgpd/control.js';
import { openBrowser } from '../../support/browser.js';
import { CALICO_CASES, type CasePolicies, KUBERNETES_CASES, type MatrixCase, TIER_CASES } from './cases.js';
import { ADMIN_CASES } from './cases-admin.js';
import { PolicyCluster, type ResourceDoc } from './cluster.js';
import { type Labels, type Model, type NetworkPolicy, type Probe, podKey } from '../../support/policy/model.js';
import { type Measured, Prober, resultKey } from './probe.js';
import { calicoTruthTable } from '../../support/policy/reference-calico.js';
import { stagedTruthTable } from '../../support/policy/reference-staged.js';
import { STAGED_CASES, type StagedCase } from './staged-cases.js';
import { k8sTruthTable } from '../../support/policy/reference.js';
import { formatComparison, type TruthTable } from '../../support/policy/truth-table.js';
import { cidrAddress } from '../../../ip/index.js';

const ROOT = new URL('../../..', import.meta.url).pathname;
const ARTIFACTS = join(ROOT, 'test-artifacts/web-page');

const PROBES: readonly Probe[] = [
  { protocol: 'TCP', port: 80 },
  { protocol: 'TCP', port: 81 },
  { protocol: 'UDP', port: 80 },
];
const NAMESPACES = ['x', 'y', 'z'] as const;
const PODS = ['a', 'b', 'c'] as const;
const NODES = ['n1', 'n2'] as const;
const NODE_ADDRESS: Record<string, string> = { n1: '10.10.0.11', n2: '10.10.0.12' };
const INTERNET = '198.51.100.10';
/** How long a policy change may take to reach both kernels. */
const ENFORCE_DEADLINE_MS = 30_000;
const NONE: CasePolicies = { kubernetes: [], calico: [] };
/** A polled probe's timeout: what a blocked one costs. */
const POLL_TIMEOUT_MS = 300;

describe('policy matrix: 2 nodes, namespaces x y z, pods a b c, TCP 80/81 and UDP 80', function () {
  this.timeout(600_000);
  const cluster = new PolicyCluster();
  const dir = mkdtempSync(join(tmpdir(), 'pmprobe-'));
  const prober = new Prober(dir);
  const enforcing = process.env.PODROUTE_POLICY_E2E !== '0';

  const model = (): Model => ({ namespaces: [...cluster.namespaces.values()], pods: cluster.modelPods() });
  const expect = (p: CasePolicies): TruthTable => calicoTruthTable(model(), p, PROBES);
  const baseline = (): TruthTable => expect(NONE);

  /**
   * Polls the matrix (single attempts, short timeout) until it equals `expected` twice in a
   * row, or the deadline; then one last measurement with a retry per failed probe decides.
   * A blocked probe costs the whole timeout, twice a case; an admitted one answers in about a
   * millisecond (the open matrix, 243 probes, takes under 100 ms), so 300 ms still tells them apart.
   */
  async function waitMatrix(title: string, expected: TruthTable, deadlineMs = ENFORCE_DEADLINE_MS): Promise<Measured> {
    const deadline = Date.now() + deadlineMs;
    let agreed = 0;
    while (Date.now() < deadline) {
      const m = await prober.matrix(model().pods, PROBES, { attempts: 1, timeoutMs: POLL_TIMEOUT_MS });
      agreed = expected.differences(m.table).length === 0 ? agreed + 1 : 0;
      if (agreed === 2) return m;
      if (agreed === 0) await sleep(200);
    }
    const last = await prober.matrix(model().pods, PROBES, { attempts: 2, timeoutMs: 1_000 });
    if (expected.differences(last.table).length > 0) assert.fail(formatComparison(expected, last.table, title));
    return last;
  }

  function requireEnforcement(ctx: Mocha.Context): void {
    if (!enforcing) ctx.skip();
  }

  /** A case's documents in the order apply takes them: a Tier before the policies in it. */
  function docsOf(p: CasePolicies): ResourceDoc[] {
    return [...(p.tiers ?? []), ...p.calico, ...p.kubernetes, ...adminDocs(p)];
  }

  /** The order delete takes them: a tier only once it holds no policy. */
  function deleteOrder(p: CasePolicies): ResourceDoc[] {
    return [...p.calico, ...p.kubernetes, ...adminDocs(p), ...(p.tiers ?? [])];
  }

  function adminDocs(p: CasePolicies): ResourceDoc[] {
    return [...(p.admin ?? []), ...(p.baseline ? [p.baseline] : [])];
  }

  /** Applies a case, checks it and each of its steps, then undoes everything and waits for the open matrix. */
  async function runCase(c: MatrixCase): Promise<void> {
    const policies = c.policies(model());
    let inForce = policies;
    const podLabels = new Map<string, Labels>();
    const nsLabels = new Map<string, Labels>();
    await cluster.apply(docsOf(policies));
    try {
      const first = expect(policies);
      assert.notEqual(first.differences(baseline()).length, 0, `case "${c.name}" must block something, or it proves nothing`);
      await waitMatrix(c.name, first);
      for (const step of c.steps ?? []) {
        if ('deletePolicies' in step) {
          await cluster.delete(deleteOrder(inForce));
          inForce = NONE;
        } else if ('relabelPod' in step) {
          const { namespace, name, labels } = step.relabelPod;
          const key = `${namespace}/${name}`;
          if (!podLabels.has(key)) podLabels.set(key, cluster.pods.get(key)!.labels);
          await cluster.labelPod(namespace, name, labels);
        } else {
          const { name, labels } = step.relabelNamespace;
          if (!nsLabels.has(name)) nsLabels.set(name, cluster.namespaces.get(name)!.labels);
          await cluster.namespace(name, labels);
        }
        const next = expect(inForce);
        assert.notEqual(next.differences(first).length, 0, `step "${step.name}" must change the table`);
        await waitMatrix(`${c.name}, ${step.name}`, next);
      }
    } finally {
      await cluster.delete(deleteOrder(inForce));
      for (const [key, labels] of podLabels) {
        const [namespace, name] = key.split('/') as [string, string];
        await cluster.labelPod(namespace, name, labels);
      }
      for (const [name, labels] of nsLabels) await cluster.namespace(name, labels);
    }
    await waitMatrix(`${c.name}: undone, every pod reaches every pod again`, baseline());
  }

  before(async function () {
    this.timeout(180_000);
    await cluster.up();
    for (const ns of NAMESPACES) await cluster.namespace(ns, { ns });
    let i = 0;
    for (const ns of NAMESPACES) for (const name of PODS) await cluster.pod(NODES[i++ % NODES.length]!, ns, name, { pod: name });
    await prober.start([
      ...cluster.modelPods().map((p) => ({ key: podKey(p), netns: cluster.pods.get(podKey(p))!.netns })),
      { key: 'internet', netns: cluster.nodeNetns('inet') },
    ]);
    if (!enforcing) console.log('      enforcing cases skipped: PODROUTE_POLICY_E2E=0');
  });

  after(async function () {
    this.timeout(60_000);
    await prober.stop();
    rmSync(dir, { recursive: true, force: true });
    await cluster.down();
  });

  it('no policy: every pod reaches every pod on every probe, with its own address (pod to pod is never NATed)', async () => {
    // Routes to the other node's blocks arrive over BGP: the wait covers that too.
    const measured = await waitMatrix('no policy', baseline());
    for (const from of model().pods)
      for (const to of model().pods)
        for (const probe of PROBES) {
          const r = measured.results.get(resultKey(podKey(from), podKey(to), probe))!;
          assert.equal(
            r.reply,
            `${podKey(to)} ${from.ip}`,
            `${podKey(from)} -> ${podKey(to)} ${probe.protocol}: the far side must see the pod's own address`,
          );
        }
    console.log(`      (9×9×3 matrix measured in ${measured.ms} ms)`);
  });

  it('the prober reads a kernel drop as blocked: nft in x/a dropping TCP 81 and UDP 80 equals a policy admitting only TCP 80', async () => {
    // Our own table, in the pod namespace this test made; loopback stays open (a pod always reaches itself).
    const ns = cluster.pods.get('x/a')!.netns;
    const nft = (script: string) => run(['ip', 'netns', 'exec', ns, 'nft', '-f', '-'], { input: script });
    await nft(
      'table inet probecheck {\n chain input {\n  type filter hook input priority 0; policy accept;\n  iifname "lo" accept\n  tcp dport 81 drop\n  udp dport 80 drop\n }\n}\n',
    );
    try {
      const only80: NetworkPolicy = {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'only-80', namespace: 'x' },
        spec: { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ ports: [{ protocol: 'TCP', port: 80 }] }] },
      };
      const expected = k8sTruthTable(model(), [only80], PROBES);
      assert.equal(expected.differences(baseline()).length, 16, '8 pods × 2 probes blocked into x/a');
      await waitMatrix('nft drop in x/a', expected, 5_000);
    } finally {
      await nft('delete table inet probecheck\n');
    }
    await waitMatrix('nft drop removed', baseline(), 5_000);
  });

  it('the datastore holds what the reference is told: pods with their namespace, labels and named ports; namespaces with labels', async () => {
    const list = async (kind: string) => {
      const r = await cluster.podroute(['get', kind, '-o', 'json']);
      assert.equal(r.code, 0, r.stderr);
      return (
        JSON.parse(r.stdout) as {
          items: { metadata: { name: string; namespace?: string; labels?: Labels }; spec: { ports?: unknown[]; ipNetworks?: string[] } }[];
        }
      ).items;
    };
    const weps = await list('workloadendpoint');
    for (const pod of model().pods) {
      const w = weps.find((x) => x.metadata.namespace === pod.namespace && x.spec.ipNetworks?.some((n) => cidrAddress(n) === pod.ip));
      assert.ok(w, `no WorkloadEndpoint in ${pod.namespace} with ${pod.ip}`);
      assert.deepEqual(
        w.metadata.labels,
        { ...pod.labels, 'projectcalico.org/namespace': pod.namespace, 'projectcalico.org/orchestrator': 'k8s' },
        podKey(pod),
      );
      assert.deepEqual(
        w.spec.ports,
        pod.ports.map((p) => ({ name: p.name, protocol: p.protocol, port: p.containerPort })),
        podKey(pod),
      );
    }
    const namespaces = await list('namespace');
    for (const ns of model().namespaces)
      assert.deepEqual(namespaces.find((n) => n.metadata.name === ns.name)?.metadata.labels, ns.labels, `namespace ${ns.name}`);
  });

  it('felix programs table inet podroute on both nodes', async function () {
    requireEnforcement(this);
    const both = async () => (await Promise.all(NODES.map((n) => cluster.enforces(n)))).every(Boolean);
    const deadline = Date.now() + ENFORCE_DEADLINE_MS;
    while (!(await both()) && Date.now() < deadline) await sleep(250);
    if (!(await both()))
      assert.fail(`no table inet podroute on ${NODES.join(' and ')}; what the agents said:\n${cluster.agentLog('policy')}`);
  });

  // SCTP is probed under a real kernel instead (test/e2e/real-kernel): this machine's kernel has no
  // SCTP module, and Node no SCTP sockets.

  describe('Kubernetes NetworkPolicy', () => {
    for (const c of KUBERNETES_CASES)
      it(c.name, async function () {
        requireEnforcement(this);
        await runCase(c);
      });
  });

  it('podroute policy counters on a node: the tier drop of a deny-all counts the probes it blocked', async function () {
    requireEnforcement(this);
    const deny: ResourceDoc = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'counted-deny', namespace: 'x' },
      spec: { podSelector: {}, policyTypes: ['Ingress'] },
    };
    const policies: CasePolicies = { kubernetes: [deny as NetworkPolicy], calico: [] };
    await cluster.apply([deny]);
    try {
      await waitMatrix('deny-all ingress in x, for the counters', expect(policies));
      const dropped: Record<string, number> = {};
      for (const node of NODES) {
        const r = await execCommand(
          [process.execPath, join(ROOT, 'bin/podroute.js'), 'policy', 'counters', '--control', join(cluster.state.dir, `${node}.sock`)],
          { timeoutMs: 20_000 },
        );
        assert.equal(r.code, 0, r.stderr);
        // A row per rule id: the tier ends of x's pods (`<iface>/in/tier…`) are where a deny-all drops.
        for (const line of r.stdout.split('\n').slice(1)) {
          const [id, packets] = line.trim().split(/\s+/);
          if (id && /\/in\/tier/.test(id)) dropped[node] = (dropped[node] ?? 0) + Number(packets);
        }
      }
      assert.ok(
        Object.values(dropped).reduce((a, b) => a + b, 0) > 0,
        `the probes the policy blocked are counted: ${JSON.stringify(dropped)}`,
      );
    } finally {
      await cluster.delete([deny]);
    }
    await waitMatrix('counted deny-all undone', baseline());
  });

  it('flow logs: an allowed connection names the Kubernetes policy and rule, a denied one the Calico Deny rule, on the destination’s node within 1 s, and on that node’s web page', async function () {
    requireEnforcement(this);
    // y/b admits x/a on TCP 80 (Kubernetes); z/c refuses x/a on TCP 80 by a Calico Deny rule.
    const allow: ResourceDoc = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'flow-allow', namespace: 'y' },
      spec: {
        podSelector: { matchLabels: { pod: 'b' } },
        ingress: [
          {
            from: [{ namespaceSelector: { matchLabels: { ns: 'x' } }, podSelector: { matchLabels: { pod: 'a' } } }],
            ports: [{ protocol: 'TCP', port: 80 }],
          },
        ],
      },
    };
    const deny: ResourceDoc = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: { name: 'flow-deny', namespace: 'z' },
      spec: {
        selector: "pod == 'c'",
        types: ['Ingress'],
        ingress: [
          {
            action: 'Deny',
            protocol: 'TCP',
            source: { namespaceSelector: "ns == 'x'", selector: "pod == 'a'" },
            destination: { ports: [80] },
          },
          { action: 'Allow' },
        ],
      },
    };
    await cluster.apply([allow, deny]);
    try {
      await waitMatrix(
        'flow-allow and flow-deny in force',
        expect({ kubernetes: [allow as NetworkPolicy], calico: [deny as unknown as CasePolicies['calico'][number]] }),
      );
      const from = cluster.pods.get('x/a')!;
      const records: { node: string; policy: string }[] = [];
      for (const [to, verdict, policy] of [
        ['y/b', 'allow', /^knp\.default\.y\.flow-allow$/],
        ['z/c', 'deny', /flow-deny/],
      ] as const) {
        const dst = cluster.pods.get(to)!;
        const since = new Date().toISOString();
        const probed = Date.now();
        const r = await prober.one('x/a', 'TCP', dst.ip, 80, { timeoutMs: 300 });
        assert.equal(r.ok, verdict === 'allow', `x/a -> ${to} TCP 80 ${verdict === 'allow' ? 'answered' : 'refused'}`);
        const control = join(cluster.state.dir, `${dst.node}.sock`);
        type Rec = {
          node: string;
          verdict: string;
          src: { ip?: string; pod?: string };
          dst: { ip?: string; pod?: string; namespace?: string };
          policy: { name: string; rule: string } | null;
        };
        const rec = await waitFor(
          async () =>
            (await callControl<Rec[]>(control, 'GET', `/flows?since=${encodeURIComponent(since)}&verdict=${verdict}`)).find(
              (x) => x.src.ip === from.ip && x.dst.ip === dst.ip,
            ),
          { what: `the ${verdict} record of x/a -> ${to} on ${dst.node}`, until: (x) => x !== undefined, timeoutMs: 3_000, intervalMs: 50 },
        );
        const after = Date.now() - probed;
        assert.ok(
          after < 1_000 + 300,
          `the record came ${after} ms after the probe (bound: 1 s after the connection, which the probe may take 300 ms to give up on)`,
        );
        assert.equal(rec!.node, dst.node, 'the record is the destination node’s');
        assert.equal(rec!.dst.namespace, to.split('/')[0]);
        assert.match(rec!.policy?.name ?? '', policy, JSON.stringify(rec));
        assert.equal(rec!.policy?.rule, 'ingress/0', JSON.stringify(rec));
        records.push({ node: dst.node, policy: rec!.policy!.name });
      }
      // What the destination node's web page shows of them, in a browser inside that node.
      const allowed = records[0]!;
      const browser = await openBrowser({ dir, netns: cluster.nodeNetns(allowed.node) });
      try {
        const page = await browser.browser.newPage();
        await page.goto('http://127.0.0.1:8081/');
        await page.waitForFunction(
          (name) => [...document.querySelectorAll('#flows tbody tr')].some((r) => r.textContent?.includes(name)),
          { timeout: 10_000 },
          allowed.policy,
        );
        const row = await page.$$eval(
          '#flows tbody tr',
          (rows, name) =>
            rows
              .map((r) => [...(r as HTMLTableRowElement).cells].map((c) => c.textContent ?? ''))
              .find((cells) => cells.join(' ').includes(name)),
          allowed.policy,
        );
        assert.ok(
          row?.some((c) => c.includes('x/a')) && row.some((c) => c.includes('y/b')) && row.includes('allow'),
          `the page's row: ${JSON.stringify(row)}`,
        );
        mkdirSync(ARTIFACTS, { recursive: true });
        await page.screenshot({ path: join(ARTIFACTS, 'matrix-flows.png'), fullPage: true });
      } finally {
        await browser.close();
      }
    } finally {
      await cluster.delete([allow, deny]);
    }
    await waitMatrix('flow log policies undone', baseline());
  });

  describe('Calico NetworkPolicy and GlobalNetworkPolicy', () => {
    for (const c of CALICO_CASES)
      it(c.name, async function () {
        requireEnforcement(this);
        await runCase(c);
      });
  });

  describe('Calico tiers with Kubernetes and Calico policies', () => {
    for (const c of TIER_CASES)
      it(c.name, async function () {
        requireEnforcement(this);
        await runCase(c);
      });
  });

  describe('Kubernetes AdminNetworkPolicy and BaselineAdminNetworkPolicy with Kubernetes and Calico policies', () => {
    for (const c of ADMIN_CASES)
      it(c.name, async function () {
        requireEnforcement(this);
        await runCase(c);
      });
  });

  describe('Calico staged policies', () => {
    /** `podroute policy counters` of both nodes, packets summed by rule id. */
    async function counters(): Promise<Map<string, number>> {
      const out = new Map<string, number>();
      for (const node of NODES) {
        const r = await execCommand(
          [process.execPath, join(ROOT, 'bin/podroute.js'), 'policy', 'counters', '--control', join(cluster.state.dir, `${node}.sock`)],
          { timeoutMs: 20_000 },
        );
        assert.equal(r.code, 0, r.stderr);
        for (const line of r.stdout.split('\n').slice(1)) {
          const [id, packets] = line.trim().split(/\s+/);
          if (id) out.set(id, (out.get(id) ?? 0) + Number(packets));
        }
      }
      return out;
    }

    /**
     * The matrix must be the enforced policies' alone; the staged rule named by the case must
     * count, over one more matrix, at least the probes the staged policies would decide otherwise.
     */
    async function runStagedCase(c: StagedCase): Promise<void> {
      const p = c.policies();
      await cluster.apply([...(p.tiers ?? []), ...p.calico, ...p.kubernetes, ...p.staged]);
      try {
        const enforced = expect(p);
        const changed = stagedTruthTable(model(), p, p.staged, PROBES).differences(enforced);
        assert.notEqual(changed.length, 0, `case "${c.name}": the staged policies must change something as if enforced`);
        await waitMatrix(c.name, enforced);
        if (c.counted) {
          const deadline = Date.now() + ENFORCE_DEADLINE_MS;
          while (!(await counters()).has(c.counted) && Date.now() < deadline) await sleep(250);
          const before = (await counters()).get(c.counted);
          assert.ok(before !== undefined, `no counter ${c.counted} on either node`);
          const m = await prober.matrix(model().pods, PROBES, { attempts: 1, timeoutMs: 1_000 });
          assert.equal(enforced.differences(m.table).length, 0, formatComparison(enforced, m.table, `${c.name}, while counting`));
          const counted = (await counters()).get(c.counted)! - before;
          assert.ok(
            counted >= changed.length,
            `${c.counted} counted ${counted} packets over one matrix; the staged policy would have decided ${changed.length} probes`,
          );
          // Each probe is one new connection (a probe sent again only when it failed): a rule that
          // counted what it does not match would count every probe into its endpoints instead.
          assert.ok(counted <= 2 * changed.length, `${c.counted} counted ${counted} packets for ${changed.length} probes it decides`);
        }
      } finally {
        await cluster.delete([...p.staged, ...p.calico, ...p.kubernetes, ...(p.tiers ?? [])]);
      }
      await waitMatrix(`${c.name}: undone`, baseline());
    }

    for (const c of STAGED_CASES)
      it(c.name, async function () {
        requireEnforcement(this);
        await runStagedCase(c);
      });
  });

  describe('natOutgoing', () => {
    it('the far side answers the nodes and has no route to the pool (only masquerading lets a pod reach it)', async () => {
      for (const node of NODES) {
        const ping = await execCommand(['ip', 'netns', 'exec', cluster.nodeNetns(node), 'ping', '-c', '1', '-W', '2', INTERNET]);
        assert.equal(ping.code, 0, `${node} pings ${INTERNET}: ${ping.stdout}${ping.stderr}`);
      }
      const route = await execCommand(['ip', '-n', cluster.nodeNetns('inet'), 'route', 'get', model().pods[0]!.ip]);
      assert.notEqual(route.code, 0, `inet must not route to the pods: ${route.stdout}`);
    });

    it('a pod reaches an address outside every pool as its node (TCP, UDP, ping); pod to pod keeps its address', async function () {
      requireEnforcement(this);
      for (const pod of model().pods) {
        const node = cluster.pods.get(podKey(pod))!.node;
        const seen = `internet ${NODE_ADDRESS[node]}`;
        for (const protocol of ['TCP', 'UDP'] as const) {
          const deadline = Date.now() + ENFORCE_DEADLINE_MS;
          let r = await prober.one(podKey(pod), protocol, INTERNET, 80);
          while (!r.ok && Date.now() < deadline) r = await prober.one(podKey(pod), protocol, INTERNET, 80);
          assert.equal(r.reply, seen, `${podKey(pod)} on ${node} -> ${INTERNET} ${protocol}: ${r.error ?? ''}`);
        }
        const ping = await execCommand([
          'ip',
          'netns',
          'exec',
          cluster.pods.get(podKey(pod))!.netns,
          'ping',
          '-c',
          '1',
          '-W',
          '2',
          INTERNET,
        ]);
        assert.equal(ping.code, 0, `${podKey(pod)} pings ${INTERNET}: ${ping.stdout}${ping.stderr}`);
      }
      const m = await waitMatrix('no policy, natOutgoing on', baseline());
      for (const from of model().pods)
        for (const to of model().pods)
          assert.equal(m.results.get(resultKey(podKey(from), podKey(to), PROBES[0]!))!.reply, `${podKey(to)} ${from.ip}`);
    });
  });

  describe('bad input', () => {
    const base: NetworkPolicy = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'deny-all-ingress', namespace: 'x' },
      spec: { podSelector: {}, policyTypes: ['Ingress'] },
    };
    const withSpec = (spec: Record<string, unknown>): ResourceDoc => ({ ...base, spec: { ...base.spec, ...spec } });
    const calico = (rule: Record<string, unknown>): ResourceDoc => ({
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: { name: 'bad', namespace: 'x' },
      spec: { selector: 'all()', types: ['Ingress'], ingress: [rule] },
    });
    // The field's full path must be in the message: "spec.ingress[0].ports[0].endPort: …".
    const BAD: readonly [string, ResourceDoc, string][] = [
      ['endPort below port', withSpec({ ingress: [{ ports: [{ port: 81, endPort: 80 }] }] }), 'spec.ingress[0].ports[0].endPort'],
      [
        'endPort with a named port',
        withSpec({ ingress: [{ ports: [{ port: 'serve-80-tcp', endPort: 90 }] }] }),
        'spec.ingress[0].ports[0].endPort',
      ],
      ['protocol ICMP', withSpec({ egress: [{ ports: [{ protocol: 'ICMP', port: 80 }] }] }), 'spec.egress[0].ports[0].protocol'],
      [
        'except outside cidr',
        withSpec({ ingress: [{ from: [{ ipBlock: { cidr: '10.244.0.0/16', except: ['10.0.0.0/8'] } }] }] }),
        'spec.ingress[0].from[0].ipBlock.except[0]',
      ],
      [
        'ipBlock with a podSelector',
        withSpec({ ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8' }, podSelector: {} }] }] }),
        'spec.ingress[0].from[0].ipBlock',
      ],
      [
        'operator Has',
        withSpec({ podSelector: { matchExpressions: [{ key: 'pod', operator: 'Has' }] } }),
        'spec.podSelector.matchExpressions[0].operator',
      ],
      ['policyTypes Sideways', withSpec({ policyTypes: ['Sideways'] }), 'spec.policyTypes[0]'],
      ['unknown field ingres', withSpec({ ingres: [{}] }), 'spec.ingres'],
      ['Calico action Accept', calico({ action: 'Accept' }), 'spec.ingress[0].action'],
      ['Calico ports without protocol', calico({ action: 'Allow', destination: { ports: [80] } }), 'spec.ingress[0].destination.ports'],
      [
        'Calico selector that does not parse',
        calico({ action: 'Allow', source: { selector: "pod = 'a'" } }),
        'spec.ingress[0].source.selector',
      ],
    ];

    it('every invalid policy is refused naming the field; a file with one bad document writes nothing', async () => {
      for (const [what, doc, field] of BAD) {
        const r = await cluster.applyRaw([doc]);
        assert.notEqual(r.code, 0, `${what}: accepted\n${r.stdout}`);
        assert.ok(r.stderr.includes(`${field}:`), `${what}: the error must name ${field}, got: ${r.stderr.trim()}`);
      }
      const good: ResourceDoc = { ...base, metadata: { name: 'good', namespace: 'y' } };
      const r = await cluster.applyRaw([good, BAD[0]![1]]);
      assert.notEqual(r.code, 0);
      const got = await cluster.podroute(['get', 'kubernetesnetworkpolicy', '-o', 'json']);
      assert.doesNotMatch(got.stdout, /"good"/, 'the valid document of a refused file must not be written');
    });

    it('a refused update leaves the rules in force', async function () {
      requireEnforcement(this);
      await cluster.apply([base]);
      try {
        const expected = expect({ kubernetes: [base as NetworkPolicy], calico: [] });
        await waitMatrix('deny-all ingress in x', expected);
        const r = await cluster.applyRaw([withSpec({ ingress: [{ ports: [{ port: 81, endPort: 80 }] }] })]);
        assert.notEqual(r.code, 0);
        await sleep(1_000);
        await waitMatrix('deny-all ingress in x, after a refused update', expected, 3_000);
      } finally {
        await cluster.delete([base]);
      }
      await waitMatrix('undone', baseline());
    });
  });
});
