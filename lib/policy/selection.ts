// Whether an endpoint is in a selection: its namespace in scope, its labels matching the
// selector. Selectors are compiled once per distinct text and kept, since the same few texts
// are matched against every endpoint.
import { type Labels, parseSelector, type Selector } from '../resources/index.js';
import type { EndpointSelection, NamespaceScope } from './model.js';
import type { Workload } from './workload.js';

export class SelectionMatcher {
  private readonly compiled = new Map<string, Selector>();

  /** `namespaceLabels(name)`: the labels of a namespace as selectors see them. */
  constructor(private readonly namespaceLabels: (name: string) => Labels) {}

  selector(text: string): Selector {
    let s = this.compiled.get(text);
    if (!s) {
      s = parseSelector(text, { allowGlobal: true });
      this.compiled.set(text, s);
    }
    return s;
  }

  inScope(scope: NamespaceScope, namespace: string): boolean {
    if (scope.kind === 'all') return true;
    if (scope.kind === 'global') return false;
    if (scope.kind === 'name') return scope.name === namespace;
    return this.selector(scope.selector)(this.namespaceLabels(namespace));
  }

  matches(s: EndpointSelection, w: Workload): boolean {
    return this.inScope(s.namespaces, w.namespace) && this.selector(s.selector)(w.labels);
  }
}
