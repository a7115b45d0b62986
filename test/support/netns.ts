// Network namespaces for tests: a Lab owns namespaces (named with a prefix and the mocha
// process's PID, so parallel runs never collide), the veth pairs and bridges between them,
// and every process started inside them. destroy() kills those processes by PID and deletes
// the namespaces; it is idempotent and also runs on SIGINT/SIGTERM of the test process.
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManagedProcess } from './process.js';

export interface ExecResult {
  stdout: string;
  stderr: string;
  code: number;
}

export interface ExecOptions {
  input?: string;
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** Runs a command to completion; never throws for a non-zero exit (see `run` for that). */
export function execCommand(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
  return new Promise((resolve) => {
    const child = execFile(
      argv[0]!,
      argv.slice(1),
      { timeout: options.timeoutMs ?? 15_000, maxBuffer: 256 * 1024 * 1024, env: options.env ?? process.env, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 127) : 0;
        const killed = error && (error as { killed?: boolean }).killed ? `(killed after ${options.timeoutMs ?? 15_000} ms) ` : '';
        resolve({ stdout, stderr: killed + stderr, code });
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** Runs a command and returns its stdout; a non-zero exit throws with the command and its stderr. */
export async function run(argv: readonly string[], options: ExecOptions = {}): Promise<string> {
  const result = await execCommand(argv, options);
  if (result.code !== 0) {
    throw new Error(`\`${argv.join(' ')}\` exited ${result.code}: ${(result.stderr || result.stdout).trim()}`);
  }
  return result.stdout;
}

export class Netns {
  constructor(
    readonly lab: Lab,
    /** The kernel name (`ip netns list`), prefix and PID included. */
    readonly name: string,
    /** The short name the test gave it. */
    readonly shortName: string,
  ) {}

  /** argv prefixed so that it runs inside this namespace. */
  wrap(argv: readonly string[]): string[] {
    return ['ip', 'netns', 'exec', this.name, ...argv];
  }

  exec(argv: readonly string[], options?: ExecOptions): Promise<ExecResult> {
    return execCommand(this.wrap(argv), options);
  }

  run(argv: readonly string[], options?: ExecOptions): Promise<string> {
    return run(this.wrap(argv), options);
  }

  /** `ip <args>` inside the namespace (ip -n, so no exec is needed). */
  ip(...args: string[]): Promise<string> {
    return run(['ip', '-n', this.name, ...args]);
  }

  /** Starts a long-running process in this namespace; the lab stops it on destroy(). */
  spawn(argv: readonly string[], options: { name: string; env?: NodeJS.ProcessEnv; cwd?: string }): ManagedProcess {
    return this.lab.track(
      new ManagedProcess(this.wrap(argv), {
        name: `${this.shortName}/${options.name}`,
        logFile: join(this.lab.dir, `${this.shortName}-${options.name}.log`),
        env: options.env,
        cwd: options.cwd,
      }),
    );
  }

  /** PIDs of every process living in this namespace (ours by construction). */
  async pids(): Promise<number[]> {
    const result = await execCommand(['ip', 'netns', 'pids', this.name]);
    return result.stdout.split(/\s+/).filter(Boolean).map(Number);
  }
}

export interface InterfaceAddresses {
  /** Interface name inside the node namespace (default eth0, eth1, … in attach order). */
  ifname?: string;
  /** CIDR, e.g. 10.99.0.1/24. */
  v4?: string;
  /** CIDR, e.g. fd00:99::1/64; added with nodad so it is usable at once. */
  v6?: string;
}

/** A shared L2 segment: a bridge living in its own namespace. */
export class Segment {
  private ports = 0;
  constructor(
    readonly ns: Netns,
    readonly bridge: string,
  ) {}

  /** Plugs `node` into the bridge with a veth pair and gives its end the addresses. */
  async attach(node: Netns, addresses: InterfaceAddresses = {}): Promise<string> {
    const ifname = addresses.ifname ?? `eth${await countInterfaces(node, 'eth')}`;
    const port = `p${this.ports++}`;
    await run(['ip', 'link', 'add', ifname, 'netns', node.name, 'type', 'veth', 'peer', 'name', port, 'netns', this.ns.name]);
    await this.ns.ip('link', 'set', port, 'master', this.bridge, 'up');
    await configureInterface(node, ifname, addresses);
    return ifname;
  }
}

async function countInterfaces(node: Netns, prefix: string): Promise<number> {
  const out = await node.ip('-o', 'link', 'show');
  return out.split('\n').filter((line) => new RegExp(`^\\d+: ${prefix}\\d+[@:]`).test(line)).length;
}

async function configureInterface(node: Netns, ifname: string, addresses: InterfaceAddresses): Promise<void> {
  if (addresses.v4) await node.ip('addr', 'add', addresses.v4, 'dev', ifname);
  if (addresses.v6) await node.ip('-6', 'addr', 'add', addresses.v6, 'dev', ifname, 'nodad');
  await node.ip('link', 'set', ifname, 'up');
}

const liveLabs = new Set<Lab>();
let signalHooksInstalled = false;

function installSignalHooks(): void {
  if (signalHooksInstalled) return;
  signalHooksInstalled = true;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      for (const lab of liveLabs) lab.destroySync();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    });
  }
  // A run that ends without the after hooks (mocha --exit, a crash) still leaves nothing behind.
  process.once('exit', () => {
    for (const lab of liveLabs) lab.destroySync();
  });
}

export interface LabOptions {
  /** Goes into namespace names: `<tag><pid>-<name>`; keep it short. Default "pr". */
  tag?: string;
}

export class Lab {
  readonly prefix: string;
  /** A private directory for configs, sockets, logs and captures (deleted by destroy()). */
  readonly dir: string;
  private readonly namespaces: Netns[] = [];
  private readonly started: ManagedProcess[] = [];
  private readonly cleanups: (() => Promise<void> | void)[] = [];
  private segments = 0;
  private destroyed: Promise<void> | undefined;

  constructor(options: LabOptions = {}) {
    this.prefix = `${options.tag ?? 'pr'}${process.pid}-`;
    this.dir = mkdtempSync(join(tmpdir(), `podroute-lab-${process.pid}-`));
    // Daemons drop privileges (FRR runs as user frr): they must be able to reach their
    // instance directories below this one.
    chmodSync(this.dir, 0o755);
    liveLabs.add(this);
    installSignalHooks();
  }

  /** Creates a namespace with loopback up. */
  async namespace(shortName: string): Promise<Netns> {
    if (!/^[a-z0-9][a-z0-9-]{0,30}$/i.test(shortName))
      throw new Error(`namespace name ${JSON.stringify(shortName)}: use letters, digits and -`);
    const ns = new Netns(this, `${this.prefix}${shortName}`, shortName);
    await run(['ip', 'netns', 'add', ns.name]);
    this.namespaces.push(ns);
    await ns.ip('link', 'set', 'lo', 'up');
    return ns;
  }

  /** A bridge namespace: a shared L2 segment that nodes attach to. */
  async segment(shortName = `sw${this.segments}`): Promise<Segment> {
    this.segments++;
    const ns = await this.namespace(shortName);
    await ns.ip('link', 'add', 'br0', 'type', 'bridge');
    await ns.ip('link', 'set', 'br0', 'up');
    return new Segment(ns, 'br0');
  }

  /** A point-to-point veth pair between two namespaces. */
  async link(a: Netns, aAddresses: InterfaceAddresses, b: Netns, bAddresses: InterfaceAddresses): Promise<[string, string]> {
    const aName = aAddresses.ifname ?? `eth${await countInterfaces(a, 'eth')}`;
    const bName = bAddresses.ifname ?? `eth${await countInterfaces(b, 'eth')}`;
    await run(['ip', 'link', 'add', aName, 'netns', a.name, 'type', 'veth', 'peer', 'name', bName, 'netns', b.name]);
    await configureInterface(a, aName, aAddresses);
    await configureInterface(b, bName, bAddresses);
    return [aName, bName];
  }

  track(process: ManagedProcess): ManagedProcess {
    this.started.push(process);
    return process;
  }

  /** Runs on destroy(), before the processes are stopped (e.g. a capture flushing its file). */
  onDestroy(cleanup: () => Promise<void> | void): void {
    this.cleanups.push(cleanup);
  }

  /** The namespaces still owned by this lab. */
  get namespaceNames(): string[] {
    return this.namespaces.map((ns) => ns.name);
  }

  /** Every PID this lab started (alive or not). */
  get pids(): number[] {
    return this.started.map((p) => p.pid);
  }

  /** Every process this lab started (alive or not). */
  get processes(): readonly ManagedProcess[] {
    return this.started;
  }

  /** Stops every process (by PID), deletes every namespace and the lab directory. Idempotent. */
  destroy(options: { keepDir?: boolean } = {}): Promise<void> {
    this.destroyed ??= this.doDestroy(options.keepDir ?? process.env.PODROUTE_KEEP_LAB === '1');
    return this.destroyed;
  }

  private async doDestroy(keepDir: boolean): Promise<void> {
    const errors: string[] = [];
    for (const cleanup of this.cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch (error) {
        errors.push(String(error));
      }
    }
    await Promise.all(this.started.map((p) => p.stop(3000)));
    // Anything else still inside our namespaces was forked by what we started.
    for (const ns of this.namespaces) {
      for (const pid of await ns.pids()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }
    for (const ns of this.namespaces.splice(0).reverse()) {
      const result = await execCommand(['ip', 'netns', 'del', ns.name]);
      if (result.code !== 0) errors.push(`ip netns del ${ns.name}: ${result.stderr.trim()}`);
    }
    if (!keepDir) rmSync(this.dir, { recursive: true, force: true });
    liveLabs.delete(this);
    if (errors.length > 0) throw new Error(`lab cleanup: ${errors.join('; ')}`);
  }

  /** The signal-handler path: synchronous, best effort. */
  destroySync(): void {
    for (const p of this.started) {
      if (!p.running) continue;
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    for (const ns of this.namespaces.splice(0)) {
      try {
        const pids = execFileSync('ip', ['netns', 'pids', ns.name], { encoding: 'utf8' }).split(/\s+/).filter(Boolean);
        for (const pid of pids) process.kill(Number(pid), 'SIGKILL');
        execFileSync('ip', ['netns', 'del', ns.name], { stdio: 'ignore' });
      } catch {
        /* best effort */
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
    liveLabs.delete(this);
  }
}

/** Namespaces on this machine whose name starts with `prefix` (for leak checks). */
export async function listNamespaces(prefix: string): Promise<string[]> {
  const out = await run(['ip', 'netns', 'list']);
  return out
    .split('\n')
    .map((line) => line.split(' ')[0]!)
    .filter((name) => name.startsWith(prefix));
}

/** True if a process with this PID exists (zombies of ours are reaped by Node). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
