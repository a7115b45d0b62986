// A child process the lab owns: started in the foreground so its PID is the daemon's own,
// stopped by that PID (SIGTERM, then SIGKILL after a bound), its output kept in a log file
// and a short tail for error messages.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';

export interface SpawnOptions {
  /** Short name used in errors and the log file name. */
  name: string;
  logFile: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

export class ManagedProcess {
  readonly pid: number;
  readonly name: string;
  readonly logFile: string;
  /** Resolves with the exit code (or the signal name) once the process is gone. */
  readonly exited: Promise<number | string>;
  private readonly child: ChildProcess;
  private readonly log: WriteStream;
  private tailText = '';
  private exitStatus: number | string | undefined;

  constructor(argv: readonly string[], options: SpawnOptions) {
    this.name = options.name;
    this.logFile = options.logFile;
    this.log = createWriteStream(options.logFile);
    // detached: its own process group, so a Ctrl-C aimed at mocha does not reach it first and
    // the lab decides the order of shutdown.
    this.child = spawn(argv[0]!, argv.slice(1), {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: options.env ?? process.env,
      cwd: options.cwd,
    });
    if (this.child.pid === undefined) throw new Error(`${this.name}: could not start ${argv.join(' ')}`);
    this.pid = this.child.pid;
    const keep = (chunk: Buffer): void => {
      // Output can still arrive after 'exit' (the pipes drain later, or a forked child holds
      // them), when stop() has closed the log already: the tail keeps it.
      if (!this.log.writableEnded) this.log.write(chunk);
      this.tailText = (this.tailText + chunk.toString('utf8')).slice(-4000);
    };
    this.child.stdout!.on('data', keep);
    this.child.stderr!.on('data', keep);
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exitStatus = code ?? signal ?? 'unknown';
        resolve(this.exitStatus);
      });
      this.child.on('error', (error) => {
        keep(Buffer.from(`spawn error: ${error.message}\n`));
        this.exitStatus = 'spawn-error';
        resolve(this.exitStatus);
      });
    });
    this.child.unref();
    // The pipes must not keep mocha alive either.
    (this.child.stdout as unknown as { unref?: () => void }).unref?.();
    (this.child.stderr as unknown as { unref?: () => void }).unref?.();
  }

  get running(): boolean {
    return this.exitStatus === undefined;
  }

  /** The last few KB of what the process printed. */
  tail(): string {
    return this.tailText;
  }

  /** Subscribe to output (stdout and stderr together), e.g. to await a "ready" line. */
  onOutput(listener: (text: string) => void): () => void {
    const handler = (chunk: Buffer): void => listener(chunk.toString('utf8'));
    this.child.stdout!.on('data', handler);
    this.child.stderr!.on('data', handler);
    return () => {
      this.child.stdout!.off('data', handler);
      this.child.stderr!.off('data', handler);
    };
  }

  /** Sends a signal to the process itself (not its group). */
  signal(signal: NodeJS.Signals): void {
    if (!this.running) return;
    try {
      process.kill(this.pid, signal);
    } catch {
      /* already gone */
    }
  }

  /**
   * SIGTERM, then SIGKILL if it has not exited within `graceMs`. Safe to call twice. The exit
   * status stays available from `exited`.
   */
  async stop(graceMs = 3000, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (this.running) {
      this.signal(signal);
      let timeout: NodeJS.Timeout | undefined;
      const timer = new Promise<'timeout'>((resolve) => (timeout = setTimeout(() => resolve('timeout'), graceMs)));
      const outcome = await Promise.race([this.exited, timer]);
      clearTimeout(timeout);
      if (outcome === 'timeout') {
        this.signal('SIGKILL');
        // Its own process group holds only what it forked (e.g. tshark's dumpcap).
        try {
          process.kill(-this.pid, 'SIGKILL');
        } catch {
          /* group already empty */
        }
      }
    }
    await this.exited;
    if (!this.log.writableEnded) await new Promise<void>((resolve) => this.log.end(resolve));
  }
}
