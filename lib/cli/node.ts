// `podroute node run|status` and `podroute bgp summary|routes`: run the node agent, or ask the
// running one through its control socket. Settings are in node-config.ts, the daemon's wiring
// in node-daemon.ts, the tables in node-output.ts.
import type { AgentStatus } from '../agent/index.js';
import { callControl } from '../bgpd/control.js';
import { labAgentsHint } from '../lab/index.js';
import type { CommandSpec, Io } from './args.js';
import { AGENT_CONTROL_FLAG, agentControl } from './flags.js';
import { nodeDrainCommands } from './datastore.js';
import { nodeRunSettings } from './node-config.js';
import { NODE_RUN_DESCRIPTION, NODE_RUN_OPTIONS } from './node-settings.js';
import { nodeRun } from './node-daemon.js';
import { formatBgpRoutes, formatBgpSummary, formatNodeStatus, type LearnedRoute } from './node-output.js';
import { emit, OUTPUT, outputOf } from './output.js';

const READ = { control: AGENT_CONTROL_FLAG, output: OUTPUT };

export function nodeCommand(io: Io): CommandSpec {
  return {
    name: 'node',
    summary: 'the node agent: run it, or ask the running one',
    subcommands: [
      {
        name: 'run',
        summary: 'run the node agent (as calico/node: BGP, IPAM, CNI, routes and policy in the kernel)',
        description: NODE_RUN_DESCRIPTION,
        options: NODE_RUN_OPTIONS,
        run: (p) => nodeRun(nodeRunSettings(p.values)),
      },
      ...nodeDrainCommands(io),
      {
        name: 'status',
        summary: 'BGP peers of the running agent, as calicoctl node status',
        options: READ,
        async run(p) {
          let status: AgentStatus;
          try {
            status = await callControl<AgentStatus>(agentControl(p.values.control), 'GET', '/status');
          } catch (e) {
            io.stdout(`podroute process is not running (${(e as Error).message}).\n`);
            // The agents of a lab listen inside its nodes, not on this host's socket.
            const hint = typeof p.values.control === 'string' ? undefined : labAgentsHint();
            if (hint) io.stdout(hint);
            return 1;
          }
          const o = outputOf(p.values.output);
          io.stdout(o === 'json' || o === 'yaml' ? emit(status, o) : formatNodeStatus(status, o === 'wide'));
          return 0;
        },
      },
    ],
  };
}

export function bgpCommand(io: Io): CommandSpec {
  return {
    name: 'bgp',
    summary: "the running agent's BGP sessions and routes",
    subcommands: [
      {
        name: 'summary',
        summary: 'sessions, as show bgp summary',
        options: READ,
        async run(p) {
          const s = await callControl<AgentStatus>(agentControl(p.values.control), 'GET', '/status');
          const o = outputOf(p.values.output);
          io.stdout(o === 'json' || o === 'yaml' ? emit({ asn: s.asn, routerId: s.routerId, peers: s.peers }, o) : formatBgpSummary(s));
          return 0;
        },
      },
      {
        name: 'routes',
        summary: 'learned routes and the routes programmed in the kernel',
        options: READ,
        async run(p) {
          const control = agentControl(p.values.control);
          const routes = await callControl<LearnedRoute[]>(control, 'GET', '/bgp/routes');
          const o = outputOf(p.values.output);
          if (o === 'json' || o === 'yaml') io.stdout(emit(routes, o));
          else io.stdout(formatBgpRoutes(routes, (await callControl<{ programmed: string[] }>(control, 'GET', '/routes')).programmed));
          return 0;
        },
      },
    ],
  };
}
