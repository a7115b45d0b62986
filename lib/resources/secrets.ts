// The fields of a resource that hold a secret in plain text (a BGP session's TCP-MD5 key), and the
// copy of a resource that printing uses: each such value replaced by a marker. A secretKeyRef is
// a reference, not a secret, and prints as it is. The marker is refused on the way back in, so a
// redacted `get -o yaml` applied again cannot set a session's key to the marker.
import type { Resource } from './types.js';

export const REDACTED = '<redacted: podroute get --show-secrets prints it>';

/** The spec fields of each kind that may hold a plain-text secret. */
const SECRET_FIELDS: Partial<Record<Resource['kind'], readonly string[]>> = {
  BGPPeer: ['password'],
  BGPConfiguration: ['nodeMeshPassword'],
};

/** The resource with every plain-text secret replaced by REDACTED (the resource itself when it holds none). */
export function redactSecrets<R extends Resource>(r: R): R {
  const fields = SECRET_FIELDS[r.kind];
  if (fields === undefined) return r;
  const spec = r.spec as Record<string, unknown>;
  if (!fields.some((f) => typeof spec[f] === 'string')) return r;
  const redacted: Record<string, unknown> = { ...spec };
  for (const f of fields) if (typeof redacted[f] === 'string') redacted[f] = REDACTED;
  return { ...r, spec: redacted } as R;
}
