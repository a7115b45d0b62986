// Explanations as the text `podroute policy explain` prints: one block per direction, tiers in
// order, each policy with its rules in words and the pods they match today; and a verdict as
// one line per step (the source's egress, the destination's ingress) naming what decided.
import { protocolText } from './describe.js';
import type { ConnectionVerdict, DirectionExplanation, PodExplanation, PodRef, PolicyExplanation, StepVerdict } from './explain.js';

const KIND_TEXT: Readonly<Record<PolicyExplanation['kind'], string>> = {
  KubernetesNetworkPolicy: 'Kubernetes NetworkPolicy',
  NetworkPolicy: 'Calico NetworkPolicy',
  GlobalNetworkPolicy: 'Calico GlobalNetworkPolicy',
  AdminNetworkPolicy: 'Kubernetes AdminNetworkPolicy',
  BaselineAdminNetworkPolicy: 'Kubernetes BaselineAdminNetworkPolicy',
};

const podText = (p: PodRef): string => `${p.namespace}/${p.pod} ${p.addresses.join(' ')}`.trim();

function policyLines(p: PolicyExplanation): string[] {
  const where = p.namespace !== undefined ? `${p.namespace}/${p.name}` : p.name;
  const order = p.order !== undefined ? `, order ${p.order}` : '';
  const staged = p.staged ? 'staged ' : '';
  const note = p.staged
    ? ': staged, counts what it would match and decides nothing'
    : p.replacedByStaged
      ? ': a staged policy sets or deletes it (as if staged, it is gone)'
      : '';
  const out = [`    ${p.id} (${staged}${KIND_TEXT[p.kind]} ${where}${order})${note}`];
  if (p.rules.length === 0) out.push('      no rules: selects the pod and allows nothing');
  for (const r of p.rules) {
    out.push(`      ${r.origin}: ${r.text}`);
    if (r.peers) out.push(`        today: ${r.peers.length ? r.peers.map(podText).join(', ') : 'no pod'}`);
  }
  return out;
}

function directionLines(name: 'ingress' | 'egress', d: DirectionExplanation): string[] {
  // A pod only staged policies select is not isolated; the staged policies are still shown.
  const out = d.isolated
    ? [`${name}: policies select the pod, tier by tier (replies to allowed connections pass); past the last tier, allowed`]
    : [`${name}: not isolated (no policy selects the pod for ${name}): everything is allowed`];
  for (const t of d.tiers) {
    const order = t.order !== undefined ? `order ${t.order}, ` : '';
    const end = t.policies.every((p) => p.staged)
      ? 'only staged policies select the pod here: the tier ends in nothing today'
      : `what none of its policies decides ${t.defaultAction === 'Pass' ? 'passes on to the next tier' : 'drops'}`;
    out.push(`  tier ${t.tier} (${order}${end})`);
    for (const p of t.policies) out.push(...policyLines(p));
  }
  return out;
}

export function formatPodExplanation(e: PodExplanation): string {
  const labels = Object.entries(e.pod.labels)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  return [
    `pod ${e.pod.namespace}/${e.pod.pod} on node ${e.pod.node}, addresses ${e.pod.addresses.join(' ') || 'none'}, labels ${labels || 'none'}`,
    ...directionLines('ingress', e.ingress),
    ...directionLines('egress', e.egress),
  ].join('\n');
}

function stepText(s: StepVerdict): string {
  const verdict = s.allowed ? 'allowed' : 'denied';
  const head = `  ${s.direction} of ${s.pod}: ${verdict}`;
  switch (s.reason) {
    case 'no-policy':
      return `${head}, no policy selects it for ${s.direction}`;
    case 'passed':
      return `${head}, every tier passed it on and the namespace's profile allows it`;
    case 'end-of-tier':
      return `${head}, no policy of tier ${s.tierName} decided and the tier's default action is Deny`;
    case 'rule':
      return `${head} by ${s.rule!.policy} ${s.origin ?? `rule ${s.rule!.index}`} (${s.rule!.action}, tier ${s.tierName})`;
  }
}

export function formatVerdict(v: ConnectionVerdict): string {
  const p = v.packet;
  const port = p.dstPort !== undefined ? ` ${p.dstPort}` : '';
  const lines = [`${p.src} -> ${p.dst} ${protocolText(p.protocol)}${port}: ${v.allowed ? 'allowed' : 'denied'}`];
  if (v.samePod) return `${lines[0]}\n  one pod: its traffic to itself never leaves it, no policy applies`;
  if (v.egress) lines.push(stepText(v.egress));
  else lines.push('  egress: the source is no pod of the cluster, no egress policy applies');
  if (v.ingress) lines.push(stepText(v.ingress));
  else lines.push('  ingress: the destination is no pod of the cluster, no ingress policy applies');
  for (const s of [v.egress, v.ingress]) for (const l of s?.logged ?? []) lines.push(`  logged by ${l.policy} rule ${l.index}`);
  if (v.staged) {
    const changes = v.staged.allowed !== v.allowed ? ', a change' : ', the same';
    lines.push(`  as if the staged policies were enforced: ${v.staged.allowed ? 'allowed' : 'denied'}${changes}`);
    for (const s of [v.staged.egress, v.staged.ingress]) if (s) lines.push(`  ${stepText(s)}`);
  }
  return lines.join('\n');
}
