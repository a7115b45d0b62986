// The page's entry: polls the agent's documents and draws them; flows follow their stream.
// Everything is read with GET from the page's own origin; nothing is sent to change the node.
import type { ClusterPicture, NodeView, RoutesView } from '../api.js';
import { byId } from './dom.js';
import { FlowView } from './flows.js';
import { drawNode, drawRoutes } from './node.js';
import { drawCluster, drawLegend } from './picture.js';

/** How often each document is read again (ms). */
const EVERY = { node: 2000, routes: 5000, cluster: 5000 };

async function get<T>(path: string): Promise<T> {
  const res = await fetch(path, { headers: { accept: 'application/json' } });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

const problems = new Map<string, string>();

function showProblems(): void {
  const p = byId('problem');
  p.hidden = problems.size === 0;
  p.textContent = [...problems.values()].join('; ');
}

/** Reads `path` now and every `ms`, drawing each answer; a failure is shown until one succeeds. */
function poll<T>(path: string, ms: number, draw: (doc: T) => void): void {
  const once = async () => {
    try {
      draw(await get<T>(path));
      problems.delete(path);
    } catch (e) {
      problems.set(path, `the agent did not answer ${path}: ${(e as Error).message}`);
    }
    showProblems();
    window.setTimeout(once, ms);
  };
  void once();
}

function main(): void {
  drawLegend();
  const flows = new FlowView();
  let flowsStarted: boolean | undefined;
  poll<NodeView>('/api/node', EVERY.node, (n) => {
    drawNode(n);
    if (flowsStarted === n.flows) return;
    flowsStarted = n.flows;
    if (n.flows) flows.start();
    else flows.off();
  });
  poll<RoutesView>('/api/routes', EVERY.routes, drawRoutes);
  poll<ClusterPicture>('/api/cluster', EVERY.cluster, drawCluster);
}

main();
