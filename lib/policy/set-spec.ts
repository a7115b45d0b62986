// What each set of the calculation graph stands for, and its id. An id is a short hash of the
// set's canonical content, so the same selector in two rules (or two policies) is one set, the
// id survives restarts and re-orderings, and a pod add changes a set's members, never its id.
import { createHash } from 'node:crypto';
import type { EndpointSelection, NamespaceScope } from './model.js';

export type SetSpec =
  /** The addresses of the endpoints a selection matches. */
  | { readonly kind: 'selection'; readonly selection: EndpointSelection }
  /** A rule's nets (or notNets, or an ipBlock's except): fixed members. */
  | { readonly kind: 'nets'; readonly nets: readonly string[] }
  /**
   * (address, protocol, port) of every named port `names` with `protocol` on the endpoints
   * that all of `within` match (none given: every endpoint of the cluster).
   */
  | {
      readonly kind: 'namedPorts';
      readonly within: readonly EndpointSelection[];
      readonly protocol: 'tcp' | 'udp' | 'sctp';
      readonly names: readonly string[];
    };

export function scopeKey(s: NamespaceScope): string {
  switch (s.kind) {
    case 'name':
      return `namespace ${s.name}`;
    case 'selector':
      return `namespaceSelector ${s.selector}`;
    case 'all':
      return 'all namespaces';
    case 'global':
      return 'global()';
  }
}

/** One line that two selections share exactly when they match the same endpoints by construction. */
export function selectionKey(s: EndpointSelection): string {
  return `${scopeKey(s.namespaces)} / ${s.selector}`;
}

/** The set's canonical content as text: what its id hashes. */
export function setContentKey(spec: SetSpec): string {
  switch (spec.kind) {
    case 'selection':
      return `selection\n${selectionKey(spec.selection)}`;
    case 'nets':
      return `nets\n${[...new Set(spec.nets)].sort().join('\n')}`;
    case 'namedPorts': {
      const within = [...new Set(spec.within.map(selectionKey))].sort();
      return `namedPorts ${spec.protocol} ${[...new Set(spec.names)].sort().join(',')}\n${within.join('\n')}`;
    }
  }
}

const PREFIX: Readonly<Record<SetSpec['kind'], string>> = { selection: 'sel', nets: 'net', namedPorts: 'port' };

/** `sel-…`, `net-…` or `port-…` and 16 hex digits of the content's SHA-256. */
export function setId(spec: SetSpec): string {
  const hash = createHash('sha256').update(setContentKey(spec)).digest('hex').slice(0, 16);
  return `${PREFIX[spec.kind]}-${hash}`;
}
