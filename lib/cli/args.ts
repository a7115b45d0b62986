// The command line's grammar as data: every command, its subcommands and flags, from which come
// `-h/--help` at every level, unknown flags refused by name, value choices checked, and the
// shell completion scripts. Flags are read by node:util's parseArgs (strict), so this adds no
// dependency; what it adds is the tree, the help and the completion.
import { parseArgs } from 'node:util';

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  /** How usage names the value: "<file>". */
  value?: string;
  help: string;
  choices?: readonly string[];
}

export interface Parsed {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
  /** The arguments as given after the command's name (for handlers that read them again). */
  raw: string[];
}

export interface CommandSpec {
  name: string;
  summary: string;
  /** The positional part of the usage line: "<kind> [name]". */
  args?: string;
  options?: Record<string, OptionSpec>;
  subcommands?: CommandSpec[];
  /** Arguments go to the handler unread: it has its own parser (and its own --help). */
  passthrough?: boolean;
  /** Most positionals taken (default: none when there are subcommands, unlimited when args is set). */
  maxPositionals?: number;
  run?: (p: Parsed) => Promise<number> | number;
}

export class UsageError extends Error {}

export interface Io {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

const HELP: OptionSpec = { type: 'boolean', short: 'h', help: 'show this help' };

function flagText(name: string, o: OptionSpec): string {
  const long = `--${name}${o.type === 'string' ? ` ${o.value ?? (o.choices ? o.choices.join('|') : '<value>')}` : ''}`;
  return o.short ? `-${o.short}, ${long}` : `    ${long}`;
}

/** The help of one command: usage, what it does, its subcommands and every flag. */
export function helpText(spec: CommandSpec, path: readonly string[]): string {
  const name = path.join(' ');
  const subs = spec.subcommands ?? [];
  const lines: string[] = [];
  const usage = [name];
  if (subs.length) usage.push(spec.run || spec.options ? '[command]' : '<command>');
  if (spec.options && Object.keys(spec.options).length) usage.push('[flags]');
  if (spec.args) usage.push(spec.args);
  lines.push(`usage: ${usage.join(' ')}`, '', spec.summary);
  if (subs.length) {
    lines.push('', 'commands:');
    const w = Math.max(...subs.map((s) => (s.name + (s.args ? ` ${s.args}` : '')).length));
    for (const s of subs) lines.push(`  ${(s.name + (s.args ? ` ${s.args}` : '')).padEnd(w)}  ${s.summary}`);
  }
  if (!spec.passthrough) {
    const opts = Object.entries({ ...spec.options, help: HELP });
    const w = Math.max(...opts.map(([n, o]) => flagText(n, o).length));
    lines.push('', 'flags:');
    for (const [n, o] of opts) lines.push(`  ${flagText(n, o).padEnd(w)}  ${o.help}`);
  }
  if (subs.length) lines.push('', `"${name} <command> --help" for a command's own flags.`);
  return `${lines.join('\n')}\n`;
}

/** The command a path of words names, and the words left for it. */
export function resolve(root: CommandSpec, argv: readonly string[]): { spec: CommandSpec; path: string[]; rest: string[] } {
  let spec = root;
  const path = [root.name];
  let i = 0;
  for (; i < argv.length; i++) {
    const next = spec.subcommands?.find((s) => s.name === argv[i]);
    if (!next) break;
    spec = next;
    path.push(next.name);
    if (next.passthrough) {
      i++;
      break;
    }
  }
  return { spec, path, rest: argv.slice(i) };
}

/** Reads the flags of one command; a flag it does not know, or a value not among its choices, is a UsageError naming it. */
export function parseFor(spec: CommandSpec, path: readonly string[], rest: string[]): Parsed {
  const options = { ...spec.options, help: HELP };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: rest,
      options: Object.fromEntries(
        Object.entries(options).map(([n, o]) => [n, o.short ? { type: o.type, short: o.short } : { type: o.type }]),
      ),
      strict: true,
      allowPositionals: true,
    });
  } catch (e) {
    // parseArgs says "Unknown option '--x'"; the command's name makes it findable.
    throw new UsageError(`${path.join(' ')}: ${(e as Error).message.split('. ')[0]}`);
  }
  const values = parsed.values as Parsed['values'];
  for (const [n, o] of Object.entries(options)) {
    const v = values[n];
    if (o.choices && typeof v === 'string' && !o.choices.includes(v))
      throw new UsageError(`${path.join(' ')}: --${n} ${JSON.stringify(v)} must be one of ${o.choices.join(', ')}`);
  }
  const max = spec.maxPositionals ?? (spec.args ? Number.POSITIVE_INFINITY : 0);
  if (parsed.positionals.length > max) {
    const extra = parsed.positionals[max];
    const known = spec.subcommands?.map((s) => s.name).join(', ');
    throw new UsageError(`${path.join(' ')}: unexpected ${JSON.stringify(extra)}${known ? ` (commands: ${known})` : ''}`);
  }
  return { values, positionals: parsed.positionals, raw: rest };
}

/** Finds the command, answers --help, checks the flags and runs it. Returns the exit code. */
export async function dispatch(root: CommandSpec, argv: readonly string[], io: Io): Promise<number> {
  const { spec, path, rest } = resolve(root, argv);
  if (spec.passthrough && spec.run) return spec.run({ values: {}, positionals: [], raw: rest });
  const before = rest.indexOf('--');
  const words = before < 0 ? rest : rest.slice(0, before);
  if (words.includes('-h') || words.includes('--help')) {
    io.stdout(helpText(spec, path));
    return 0;
  }
  let parsed: Parsed;
  try {
    parsed = parseFor(spec, path, rest);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.stderr(`${e.message}\n(${path.join(' ')} --help shows its usage)\n`);
    return 2;
  }
  if (!spec.run) {
    io.stderr(helpText(spec, path));
    return 2;
  }
  try {
    return await spec.run(parsed);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.stderr(`${e.message}\n(${path.join(' ')} --help shows its usage)\n`);
    return 2;
  }
}

/** Every command path and the words that may follow it (subcommands, flags). */
function completions(spec: CommandSpec, path: string[], out: Map<string, string[]>): void {
  const flags = spec.passthrough
    ? []
    : Object.entries({ ...spec.options, help: HELP }).flatMap(([n, o]) => [`--${n}`, ...(o.short ? [`-${o.short}`] : [])]);
  out.set(path.join(' '), [...(spec.subcommands ?? []).map((s) => s.name), ...flags]);
  for (const s of spec.subcommands ?? []) completions(s, [...path, s.name], out);
}

/** A bash completion script (zsh loads it through bashcompinit). */
export function completionScript(root: CommandSpec, shell: 'bash' | 'zsh'): string {
  const table = new Map<string, string[]>();
  completions(root, [], table);
  const fn = `_${root.name.replace(/[^A-Za-z0-9]/g, '_')}`;
  const paths = [...table.keys()].filter((p) => p !== '');
  const cases = [...table.entries()].map(([p, words]) => `    "${p}") words="${words.join(' ')}" ;;`).join('\n');
  const bash = `${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" w i words=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    case "\${path:+$path }$w" in
      ${paths.map((p) => `"${p}"`).join('|')}) path="\${path:+$path }$w" ;;
    esac
  done
  case "$path" in
${cases}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F ${fn} ${root.name}
`;
  const head = `# ${root.name} completion for ${shell}: source it, or put it where your shell loads completions.\n`;
  return shell === 'bash' ? head + bash : `${head}autoload -U +X bashcompinit && bashcompinit\n${bash}`;
}
