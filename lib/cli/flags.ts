// Flags several commands share, described once so every command's help says the same thing.
import type { OptionSpec } from './args.js';

/** Where the node agent serves its control API unless told otherwise. */
export const DEFAULT_CONTROL = '/var/run/podroute/node.sock';

export const DATASTORE_FLAG: OptionSpec = {
  type: 'string',
  value: 'file:PATH|redis://host:port|etcd://host:2379|memory',
  help: 'where resources live (default: a file in PODROUTE_STATE_DIR, ~/.local/state/podroute or /var/lib/podroute)',
};

export const NAMESPACE_FLAG: OptionSpec = {
  type: 'string',
  short: 'n',
  value: '<namespace>',
  help: 'namespace of namespaced kinds (default "default")',
};

export const AGENT_CONTROL_FLAG: OptionSpec = {
  type: 'string',
  value: '<socket>',
  help: `the agent's control socket (default ${DEFAULT_CONTROL}, or PODROUTE_CONTROL)`,
};

/** The running agent's control socket: the flag, else PODROUTE_CONTROL, else the default. */
export function agentControl(flag: unknown, env: NodeJS.ProcessEnv = process.env): string {
  return typeof flag === 'string' ? flag : (env.PODROUTE_CONTROL ?? DEFAULT_CONTROL);
}
