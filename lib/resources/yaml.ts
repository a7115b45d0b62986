// YAML in and out, as calicoctl reads and writes it: one resource per document, or a
// `kind: List` (or `<Kind>List`) with items. We emit apiVersion projectcalico.org/v3, but
// networking.k8s.io/v1 NetworkPolicy and v1 Namespace for the Kubernetes kinds.
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import { ValidationError, validateResource } from './validate.js';
import { apiVersionOf, manifestKind, type Resource } from './types.js';

// The YAML library loads with the first manifest read or written, not with this module: the CNI
// plugin is bundled with everything the resources' face exports, never reads YAML, and would
// otherwise parse the library at every start.
const load = createRequire(import.meta.url);
let library: typeof Yaml | undefined;
const yaml = (): typeof Yaml => (library ??= load('yaml') as typeof Yaml);

/** Parses every document; the first bad one throws a ValidationError naming the document and field. */
export function parseResources(text: string): Resource[] {
  const out: Resource[] = [];
  const docs = yaml().parseAllDocuments(text);
  docs.forEach((doc, i) => {
    const where = `document ${i + 1}`;
    if (doc.errors.length > 0) throw new ValidationError('(yaml)', `${where}: ${doc.errors[0]!.message}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return;
    const items = isList(value) ? value.items : [value];
    items.forEach((item, j) => {
      try {
        out.push(validateResource(item));
      } catch (e) {
        if (e instanceof ValidationError) {
          const at = isList(value) ? `${where}, item ${j + 1}` : where;
          throw new ValidationError(e.field, e.reason, e.resource ? `${at} (${e.resource})` : at);
        }
        throw e;
      }
    });
  });
  return out;
}

function isList(v: unknown): v is { items: unknown[] } {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as { kind?: unknown; items?: unknown };
  return typeof o.kind === 'string' && o.kind.endsWith('List') && Array.isArray(o.items);
}

/** One resource as a YAML document, or several as a `kind: List`, like `calicoctl get -o yaml`. */
export function formatResources(resources: readonly Resource[], asList = resources.length !== 1): string {
  const clean = resources.map(toManifest);
  if (!asList) return yaml().stringify(clean[0]);
  return yaml().stringify({ apiVersion: 'projectcalico.org/v3', kind: 'List', items: clean });
}

/**
 * A resource as its users write it: Kubernetes' NetworkPolicy under its own apiVersion and kind
 * (stored as KubernetesNetworkPolicy), a Namespace without the empty spec.
 */
export function toManifest(r: Resource): Record<string, unknown> {
  const out: Record<string, unknown> = { apiVersion: apiVersionOf(r.kind), kind: manifestKind(r.kind), metadata: r.metadata };
  if (r.kind === 'Service' || r.kind === 'Node') {
    // The store keeps a Service's and a Node's status in its spec; Kubernetes and Calico have it beside.
    const { status, ...spec } = r.spec;
    out.spec = spec;
    if (status !== undefined) out.status = status;
  } else if (r.kind === 'EndpointSlice') Object.assign(out, r.spec);
  else if (r.kind !== 'Namespace' || Object.keys(r.spec).length > 0) out.spec = r.spec;
  return out;
}
