// The `podroute-cni` entry point: reads stdin and CNI_* from the environment, prints the
// result (or the error object) on stdout, and exits 0 or 1, as the CNI spec asks.
import { parseEnv, parseNetConf, SUPPORTED_VERSIONS } from './config.js';
import { CNI_CODES, CniError } from './errors.js';
import { noteText, silent, type Say } from './notes.js';
import { cmdAdd, cmdCheck, cmdDel, cmdVersion, type StoreOpener } from './plugin.js';
import { cmdGc, cmdStatus } from './status-gc.js';
import { packageVersion } from './version.js';

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return '';
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * One CNI call: `env` stands for the process environment (nothing else is read from it), so the
 * node agent can run calls side by side for the shim; `openStore` lends it a warm datastore;
 * `say` hears what the call left or replaced of another container's.
 */
export async function runCni(
  env: NodeJS.ProcessEnv,
  stdin: string,
  openStore?: StoreOpener,
  say: Say = silent,
): Promise<{ code: number; output: string }> {
  let cniVersion = '1.0.0';
  try {
    const cenv = parseEnv(env);
    if (cenv.command === 'VERSION') {
      try {
        const v = (JSON.parse(stdin || '{}') as { cniVersion?: string }).cniVersion;
        if (typeof v === 'string') cniVersion = v;
      } catch {
        /* VERSION answers regardless of its input */
      }
      return { code: 0, output: JSON.stringify(cmdVersion(cniVersion)) };
    }
    const raw = (() => {
      try {
        return JSON.parse(stdin) as { cniVersion?: unknown };
      } catch {
        return undefined;
      }
    })();
    if (typeof raw?.cniVersion === 'string') cniVersion = raw.cniVersion;
    const conf = parseNetConf(stdin);
    switch (cenv.command) {
      case 'ADD':
        return { code: 0, output: JSON.stringify(await cmdAdd(conf, cenv, env, openStore, say)) };
      case 'DEL':
        await cmdDel(conf, cenv, env, openStore, say);
        return { code: 0, output: '' };
      case 'CHECK':
        await cmdCheck(conf, cenv, env, openStore);
        return { code: 0, output: '' };
      case 'STATUS':
        await cmdStatus(conf, env, openStore);
        return { code: 0, output: '' };
      case 'GC':
        await cmdGc(conf, env, openStore, say);
        return { code: 0, output: '' };
    }
  } catch (e) {
    const err = e instanceof CniError ? e : new CniError(CNI_CODES.internal, (e as Error).message);
    return { code: 1, output: JSON.stringify(err.toJSON(cniVersion)) };
  }
  return { code: 0, output: '' };
}

const usage = `usage: podroute-cni   (run by a container runtime, with no arguments)

The podroute CNI plugin. The runtime sets CNI_COMMAND (ADD, DEL, CHECK, VERSION, STATUS or GC),
CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME and CNI_ARGS, and writes the network configuration
(JSON) on stdin; the result or the error object comes back on stdout.

  podroute-cni -h, --help      this text
  podroute-cni -v, --version   the plugin's version and the CNI versions it speaks

  CNI_COMMAND=VERSION podroute-cni </dev/null
`;

/** The plugin's own flags for a person at a terminal; a runtime passes none. */
function answerFlags(args: readonly string[]): number | undefined {
  if (args.length === 0) return undefined;
  const [flag] = args;
  if (args.length === 1 && (flag === '-h' || flag === '--help')) {
    process.stdout.write(usage);
    return 0;
  }
  if (args.length === 1 && (flag === '-v' || flag === '--version')) {
    process.stdout.write(`podroute-cni ${packageVersion()}\nCNI spec versions: ${SUPPORTED_VERSIONS.join(', ')}\n`);
    return 0;
  }
  process.stderr.write(`podroute-cni: unknown argument ${JSON.stringify(args.join(' '))}: a runtime runs it with none\n\n${usage}`);
  return 2;
}

export async function main(args: readonly string[] = process.argv.slice(2)): Promise<void> {
  const answered = answerFlags(args);
  if (answered !== undefined) process.exit(answered);
  // The runtime keeps a plugin's stderr in its log: what a call left or replaced goes there.
  const say: Say = (n) => process.stderr.write(`podroute-cni: ${process.env.CNI_COMMAND} ${process.env.CNI_CONTAINERID}: ${noteText(n)}\n`);
  const { code, output } = await runCni(process.env, await readStdin(), undefined, say);
  if (output) process.stdout.write(output + '\n');
  process.exit(code);
}
