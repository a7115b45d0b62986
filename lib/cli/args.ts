// The command line's grammar as data: every command, its subcommands and flags, from which come
// `-h/--help` at every level, unknown flags refused by name, value choices checked, and the
// shell completion scripts. Flags are read by node:util's parseArgs (strict), so this adds no
// dependency; what it adds is the tree, the help and the completion.
import { parseArgs } from 'node:util';
import { closestName } from '../resources/index.js';

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
}

export interface CommandSpec {
  name: string;
  summary: string;
  /** Paragraphs help prints after the summary: what the command does, the environment it reads. */
  description?: string;
  /** The positional part of the usage line: "<kind> [name]". */
  args?: string;
  options?: Record<string, OptionSpec>;
  subcommands?: CommandSpec[];
  /** Most positionals taken (default: none when there are subcommands, unlimited when args is set). */
  maxPositionals?: number;
  /**
   * After this many positionals the words are another program's command line (lab exec's
   * `<command...>`): they are handed on as positionals, flags included, unread.
   */
  commandAfter?: number;
  /** The command's work, given its flags and arguments read and where to write; returns the exit code. */
  run?: (p: Parsed, io: Io) => Promise<number> | number;
}

export class UsageError extends Error {}

export interface Io {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

const HELP: OptionSpec = { type: 'boolean', short: 'h', help: 'show this help' };
/** The widest flag that keeps its help on its own line. */
const FLAG_COLUMN = 40;

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
  if (spec.description) lines.push('', spec.description.trimEnd());
  if (subs.length) {
    lines.push('', 'commands:');
    const w = Math.max(...subs.map((s) => (s.name + (s.args ? ` ${s.args}` : '')).length));
    for (const s of subs) lines.push(`  ${(s.name + (s.args ? ` ${s.args}` : '')).padEnd(w)}  ${s.summary}`);
  }
  const opts = Object.entries({ ...spec.options, help: HELP });
  // A flag too long for the column has its help on the line below, so one long flag does not push every help to the right.
  const fits = opts.map(([n, o]) => flagText(n, o).length).filter((l) => l <= FLAG_COLUMN);
  const w = Math.max(...fits);
  lines.push('', 'flags:');
  for (const [n, o] of opts) {
    const f = flagText(n, o);
    if (f.length <= FLAG_COLUMN) lines.push(`  ${f.padEnd(w)}  ${o.help}`);
    else lines.push(`  ${f}`, `  ${' '.repeat(w)}  ${o.help}`);
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
  }
  return { spec, path, rest: argv.slice(i) };
}

/**
 * The words the command's own flags are read from, and those handed on unread: everything after
 * `--`, and with commandAfter everything from the first word past that many positionals.
 */
function split(spec: CommandSpec, rest: readonly string[]): { own: string[]; unread: string[] } {
  const dashes = rest.indexOf('--');
  let end = dashes < 0 ? rest.length : dashes;
  if (spec.commandAfter !== undefined) {
    const options = spec.options ?? {};
    const takesValue = (word: string): boolean => {
      if (word.includes('=')) return false;
      const long = word.startsWith('--') ? options[word.slice(2)] : undefined;
      const short = !word.startsWith('--') ? Object.values(options).find((o) => o.short === word.slice(1)) : undefined;
      return (long ?? short)?.type === 'string';
    };
    let seen = 0;
    for (let i = 0; i < end; i++) {
      const w = rest[i]!;
      if (w.startsWith('-') && w !== '-') {
        if (takesValue(w)) i++;
      } else if (++seen > spec.commandAfter) {
        end = i;
        break;
      }
    }
  }
  return { own: rest.slice(0, end), unread: rest.slice(end === dashes ? end + 1 : end) };
}

/** Reads the flags of one command; a flag it does not know, or a value not among its choices, is a UsageError naming it. */
export function parseFor(spec: CommandSpec, path: readonly string[], rest: readonly string[]): Parsed {
  const options = { ...spec.options, help: HELP };
  const { own, unread } = split(spec, rest);
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: own,
      options: Object.fromEntries(
        Object.entries(options).map(([n, o]) => [n, o.short ? { type: o.type, short: o.short } : { type: o.type }]),
      ),
      strict: true,
      allowPositionals: true,
    });
  } catch (e) {
    // parseArgs says "Unknown option '--x'"; the command's name makes it findable, the nearest flag fixes a typo.
    const said = (e as Error).message.split('. ')[0];
    const unknown = /^Unknown option '--([^']+)'/.exec(said)?.[1];
    const near = unknown === undefined ? undefined : closestName(unknown, Object.keys(options));
    throw new UsageError(`${path.join(' ')}: ${said}${near ? ` (did you mean --${near}?)` : ''}`);
  }
  const values = parsed.values as Parsed['values'];
  for (const [n, o] of Object.entries(options)) {
    const v = values[n];
    if (o.choices && typeof v === 'string' && !o.choices.includes(v))
      throw new UsageError(`${path.join(' ')}: --${n} ${JSON.stringify(v)} must be one of ${o.choices.join(', ')}`);
  }
  const positionals = [...parsed.positionals, ...unread];
  const max =
    spec.commandAfter !== undefined ? Number.POSITIVE_INFINITY : (spec.maxPositionals ?? (spec.args ? Number.POSITIVE_INFINITY : 0));
  if (positionals.length > max) {
    const extra = positionals[max]!;
    const subs = spec.subcommands?.map((s) => s.name) ?? [];
    if (subs.length > 0 && max === 0) {
      const near = closestName(extra, subs);
      const hint = near ? `did you mean ${near}? ` : '';
      throw new UsageError(`${path.join(' ')}: unknown command ${JSON.stringify(extra)} (${hint}commands: ${subs.join(', ')})`);
    }
    throw new UsageError(`${path.join(' ')}: unexpected ${JSON.stringify(extra)}`);
  }
  return { values, positionals };
}

/** Finds the command, answers --help, checks the flags and runs it. Returns the exit code. */
export async function dispatch(root: CommandSpec, argv: readonly string[], io: Io): Promise<number> {
  const { spec, path, rest } = resolve(root, argv);
  const { own } = split(spec, rest);
  if (own.includes('-h') || own.includes('--help')) {
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
    return await spec.run(parsed, io);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.stderr(`${e.message}\n(${path.join(' ')} --help shows its usage)\n`);
    return 2;
  }
}

/** Every command path and the words that may follow it (subcommands, flags). */
function completions(spec: CommandSpec, path: string[], out: Map<string, string[]>): void {
  const flags = Object.entries({ ...spec.options, help: HELP }).flatMap(([n, o]) => [`--${n}`, ...(o.short ? [`-${o.short}`] : [])]);
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
