// The rules of tiers that span resources, checked by apply and delete as Calico's API server
// checks them: a policy's tier must exist (the default tier and the two of the Kubernetes admin
// policies always do; a Tier in the same file counts), and a tier that still holds policies
// cannot be deleted, nor can one of those three. `get tier` lists those three even unstored.
// A writer racing between the check and the write is not excluded (the datastore has no
// cross-kind transaction); the calculation graph then treats a policy of a missing tier as in a
// last tier that denies.
import type { BackendDatastore } from '../datastore/index.js';
import { DatastoreError } from '../datastore/index.js';
import { ADMIN_TIER_SPEC, BASELINE_TIER_SPEC, DEFAULT_TIER_SPEC, type ParsedTier } from '../policy/index.js';
import { API_VERSION, manifestKind, type Resource, resourceKey, type Tier, ValidationError } from '../resources/index.js';

const DEFAULT_TIER = 'default';
/** The tiers Calico creates itself and keeps: present without a Tier resource, never deleted. */
const FIXED_TIERS: readonly ParsedTier[] = [DEFAULT_TIER_SPEC, ADMIN_TIER_SPEC, BASELINE_TIER_SPEC];

/** The stored tiers, with each fixed tier the store does not hold as it is without one; by name. */
export function withFixedTiers(stored: readonly Tier[]): Tier[] {
  const names = new Set(stored.map((t) => t.metadata.name));
  const fixed = FIXED_TIERS.filter((t) => !names.has(t.name)).map(
    (t): Tier => ({
      apiVersion: API_VERSION,
      kind: 'Tier',
      metadata: { name: t.name },
      spec: { ...(t.order !== undefined ? { order: t.order } : {}), defaultAction: t.defaultAction },
    }),
  );
  return [...stored, ...fixed].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
}

/** The kinds with `spec.tier`: Calico's policies and their staged forms. */
const TIERED_KINDS = ['NetworkPolicy', 'GlobalNetworkPolicy', 'StagedNetworkPolicy', 'StagedGlobalNetworkPolicy'] as const;
type Tiered = Extract<Resource, { kind: (typeof TIERED_KINDS)[number] }>;
const isTiered = (r: Resource): r is Tiered => (TIERED_KINDS as readonly string[]).includes(r.kind);

/** Refuses a policy of the file whose `spec.tier` names a tier neither stored nor in the file. */
export async function checkPolicyTiers(store: BackendDatastore, resources: readonly Resource[]): Promise<void> {
  const named = resources.flatMap((r) => (isTiered(r) && r.spec.tier && !FIXED_TIERS.some((t) => t.name === r.spec.tier) ? [r] : []));
  if (named.length === 0) return;
  const tiers = new Set((await store.list('Tier')).items.map((t) => t.metadata.name));
  for (const r of resources) if (r.kind === 'Tier') tiers.add(r.metadata.name);
  for (const r of named) {
    if (!tiers.has(r.spec.tier!))
      throw new ValidationError(
        'spec.tier',
        `tier ${JSON.stringify(r.spec.tier)} does not exist: apply its Tier first (or in the same file)`,
        `${manifestKind(r.kind)}/${r.metadata.name}`,
      );
  }
}

/** Refuses to delete a fixed tier, or a tier some policy is still in (naming them). */
export async function checkTierDeletable(store: BackendDatastore, name: string): Promise<void> {
  if (name === DEFAULT_TIER) throw new DatastoreError('the default tier always exists and cannot be deleted', 'TierInUse');
  if (FIXED_TIERS.some((t) => t.name === name))
    throw new DatastoreError(`the ${name} tier always exists (it holds the Kubernetes admin policies) and cannot be deleted`, 'TierInUse');
  const inTier: string[] = [];
  for (const kind of TIERED_KINDS)
    for (const p of (await store.list(kind)).items) if (p.spec.tier === name) inTier.push(`${manifestKind(kind)} ${resourceKey(p)}`);
  if (inTier.length > 0)
    throw new DatastoreError(`tier ${JSON.stringify(name)} still holds ${inTier.join(', ')}: delete or move them first`, 'TierInUse');
}
