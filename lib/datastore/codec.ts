import { normalizeBlockSpec, type Kind, type Resource } from '../resources/index.js';

/** JSON text as stored, plus the revision kept beside it, to a Resource. */
export function decodeResource(kind: Kind, json: string, revision: number): Resource {
  const r = JSON.parse(json) as Resource;
  r.metadata = { ...r.metadata, resourceVersion: String(revision) };
  if (kind === 'IPAMBlock') {
    r.spec = normalizeBlockSpec(r.spec as unknown as Record<string, unknown>) as typeof r.spec;
  } else if (kind === 'IPAMHandle') {
    const s = r.spec as { block?: unknown };
    if (typeof s.block !== 'object' || s.block === null || Array.isArray(s.block)) s.block = {};
  }
  return r;
}

/** The stored form: everything but the revision. */
export function encodeResource(r: Resource): string {
  const { resourceVersion: _rv, ...metadata } = r.metadata;
  return JSON.stringify({ apiVersion: r.apiVersion, kind: r.kind, metadata, spec: r.spec });
}
