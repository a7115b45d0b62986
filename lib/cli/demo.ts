// `podroute demo` (npm start): its flags and help. The demo itself is lib/demo.
import { demoOptions, type DemoFlags, type DemoOptions } from '../demo/options.js';
import { runDemo } from '../demo/run.js';
import { UsageError, type CommandSpec } from './args.js';

export const DEMO_COMMAND: CommandSpec = {
  name: 'demo',
  summary: 'a whole cluster in this process, no root: mesh, reflector, top-of-rack, live view',
  description: `Node agents on 127.0.0.x, the memory datastore, in-memory dataplanes and real BGP sessions over
loopback; nothing to install and no root. Pods are added through IPAM and the CNI plugin's steps.
Phases: a full mesh; a route reflector (node-1) with the mesh off; a top-of-rack router every node
peers with; a pod deleted and a node added, live. The view shows nodes, sessions, pods and every
node's routes. Ctrl-C stops every agent and exits 130 (SIGTERM: 143), the code a shell and
npm start give an interrupted command. Into a pipe, add --silent to npm start (npm prints a banner
on stdout otherwise): npm start --silent -- --once --json - | jq .converged`,
  options: {
    nodes: { type: 'string', value: '<N>', help: 'nodes to start (2-50, default 4)' },
    pods: { type: 'string', value: '<N>', help: 'pods per node (1-60, default 2)' },
    once: {
      type: 'boolean',
      help: 'exit 0 once the last phase has converged, with the final view; exit 1 if a phase does not within --timeout',
    },
    json: { type: 'string', value: '<file|->', help: 'also write the final state (nodes, sessions, RIBs, routes) as JSON; - for stdout' },
    timeout: { type: 'string', value: '<seconds>', help: 'longest wait for a phase to converge (default 30)' },
    port: { type: 'string', value: '<port>', help: 'the BGP port every node listens on (default: a free one)' },
    pool: { type: 'string', value: '<cidr>', help: 'the IP pool (default 10.65.0.0/16)' },
    interval: { type: 'string', value: '<ms>', help: 'how often the view is redrawn (default 500)' },
  },
  run(p) {
    let o: DemoOptions;
    try {
      o = demoOptions(p.values as DemoFlags);
    } catch (e) {
      throw new UsageError(`demo: ${(e as Error).message}`);
    }
    return runDemo(o);
  },
};
