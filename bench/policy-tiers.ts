// What Calico's tiers and the Kubernetes admin policies cost podroute before the kernel: the
// calculation graph and the nftables compiler for a local pod added and a policy edited, on
// bench/policy.ts's cluster (Kubernetes NetworkPolicies, all in the default tier), against the
// same cluster with 200 Calico policies added: in the default tier, spread over four Tiers, and
// over four Tiers with ten AdminNetworkPolicies and a BaselineAdminNetworkPolicy. No kernel and
// no root: the kernel's share is bench/policy.ts's. Each shape is measured --rounds times in turn.
//
//   npx tsx bench/policy-tiers.ts [--policies 1000] [--endpoints 10000] [--local 150] [--reps 60] [--rounds 3]
import { compileNftables } from '../felix/index.js';
import { PolicyCalculator } from '../lib/policy/index.js';
import { type Resource, resourceKey, validateResource } from '../lib/resources/index.js';
import { numberArg } from './args.js';
import { median, ms, ratio, table } from './policy-stats.js';
import { LOCAL_NODE, PolicyWorkload } from './policy-workload.js';

const arg = (name: string, d: number): number => numberArg(name, d, { min: 1 });
const POLICIES = arg('--policies', 1000);
const ENDPOINTS = arg('--endpoints', 10_000);
const LOCAL = arg('--local', 150);
const REPS = arg('--reps', 60);
const ROUNDS = arg('--rounds', 3);

interface Shape {
  readonly name: string;
  readonly tiers: boolean;
  readonly calico: boolean;
  readonly admin: boolean;
}

const SHAPES: readonly Shape[] = [
  { name: 'Kubernetes policies only (the default tier)', tiers: false, calico: false, admin: false },
  { name: '+ 200 Calico policies, default tier', tiers: false, calico: true, admin: false },
  { name: '+ the 200 over 4 Tiers', tiers: true, calico: true, admin: false },
  { name: '+ the 200 over 4 Tiers, 10 ANPs and a BANP', tiers: true, calico: true, admin: true },
];

const v3 = (kind: string, name: string, spec: object): Resource =>
  validateResource({ apiVersion: 'projectcalico.org/v3', kind, metadata: { name }, spec });
const k8sAdmin = (kind: string, name: string, spec: object): Resource =>
  validateResource({ apiVersion: 'policy.networking.k8s.io/v1alpha1', kind, metadata: { name }, spec });

/** The resources a shape adds to the Kubernetes policies' cluster. */
function extra(s: Shape): Resource[] {
  const out: Resource[] = [];
  if (!s.calico) return out;
  for (let t = 0; t < 4; t++) {
    if (s.tiers) out.push(v3('Tier', `t${t}`, { order: 100 + t }));
    for (let p = 0; p < 50; p++)
      out.push(
        v3('GlobalNetworkPolicy', `t${t}-p${p}`, {
          ...(s.tiers ? { tier: `t${t}`, order: p } : { order: t * 50 + p }),
          selector: `app == 'app-${p}'`,
          types: ['Ingress'],
          ingress: [
            {
              action: p % 2 ? 'Pass' : 'Allow',
              protocol: 'TCP',
              source: { selector: "tier == 'web'" },
              destination: { ports: [8000 + p] },
            },
          ],
        }),
      );
  }
  if (s.admin) {
    for (let a = 0; a < 10; a++)
      out.push(
        k8sAdmin('AdminNetworkPolicy', `anp-${a}`, {
          priority: a,
          subject: { namespaces: { matchLabels: { team: `t${a}` } } },
          ingress: [{ action: 'Pass', from: [{ namespaces: {} }] }],
        }),
      );
    out.push(
      k8sAdmin('BaselineAdminNetworkPolicy', 'default', {
        subject: { namespaces: {} },
        ingress: [{ action: 'Deny', from: [{ namespaces: { matchLabels: { env: 'dev' } } }] }],
      }),
    );
  }
  return out;
}

/** Local pod adds and policy edits, each timed from the resource to the compiled table. */
function measure(s: Shape): { add: number[]; edit: number[] } {
  const w = new PolicyWorkload({ policies: POLICIES, endpoints: ENDPOINTS, local: LOCAL, namespaces: 100, seed: 1 });
  const c = new PolicyCalculator(LOCAL_NODE);
  for (const r of [...w.resources(), ...extra(s)]) c.put(r);
  compileNftables(c.input());
  const editable = w.policies.filter((p) => w.hasNumericPort(p));
  const add: number[] = [];
  const edit: number[] = [];
  for (let i = 0; i < REPS; i++) {
    const pod = w.newPod(0);
    let t = performance.now();
    c.put(pod);
    compileNftables(c.input());
    add.push(performance.now() - t);
    c.delete('WorkloadEndpoint', resourceKey(pod));
    compileNftables(c.input());
    const edited = w.editPort(editable[i % editable.length]!, i + 1);
    t = performance.now();
    c.put(edited);
    compileNftables(c.input());
    edit.push(performance.now() - t);
  }
  return { add, edit };
}

const samples = SHAPES.map(() => ({ add: [] as number[], edit: [] as number[] }));
for (let r = 0; r < ROUNDS; r++)
  for (const [i, s] of SHAPES.entries()) {
    const m = measure(s);
    samples[i]!.add.push(...m.add);
    samples[i]!.edit.push(...m.edit);
  }
const base = samples[0]!;
console.log(
  `bench/policy-tiers: ${POLICIES} Kubernetes policies, ${ENDPOINTS} endpoints (${LOCAL} local), ${REPS} × ${ROUNDS} changes a shape`,
);
console.log(
  table(
    ['shape', 'local pod add p50 (ms)', '÷ Kubernetes only', 'policy edit p50 (ms)', '÷ Kubernetes only'],
    SHAPES.map((s, i) => [
      s.name,
      ms(median(samples[i]!.add)),
      ratio(median(samples[i]!.add), median(base.add)),
      ms(median(samples[i]!.edit)),
      ratio(median(samples[i]!.edit), median(base.edit)),
    ]),
  ),
);
