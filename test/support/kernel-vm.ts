// The real-kernel VM (kernel-vm.sh beside this file) from a test: whether it is ready, and one
// command run in it with a hard deadline. Suites whose kernel modules this machine lacks (ipip,
// sctp, wireguard) run their packet-level part through it; test/ensure-deps.sh prepares it.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SCRIPT = new URL('./kernel-vm.sh', import.meta.url).pathname;

export interface KernelVmOptions {
  /** The whole run's bound, boot included: past it qemu is killed by its PID and the run rejects. */
  timeoutMs: number;
  /** A directory of this machine the VM may write to (same path inside); everything else is thrown away. */
  outDir?: string;
  /** Guest memory, MB (default 1536). */
  memMb?: number;
  /** Guest CPUs (default 2). */
  cpus?: number;
  /** Working directory inside the VM (default: this process's). */
  cwd?: string;
  /** Variables for the command; the VM passes on only PATH and HOME otherwise. */
  env?: Record<string, string>;
}

export interface KernelVmResult {
  code: number;
  stdout: string;
  stderr: string;
}

export class KernelVmTimeoutError extends Error {
  constructor(
    readonly timeoutMs: number,
    readonly stdout: string,
    readonly stderr: string,
    /** The killed qemu's PID, when it had started. */
    readonly qemuPid: number | undefined,
  ) {
    super(`the kernel VM was killed after ${timeoutMs} ms; its stderr ended: ${stderr.slice(-2000)}`);
    this.name = 'KernelVmTimeoutError';
  }
}

/**
 * Whether the VM can run here: root, qemu installed and the kernel prepared. PODROUTE_KERNEL_VM=0
 * answers false on purpose (the VM suites then skip, saying so).
 */
export async function kernelVmAvailable(): Promise<boolean> {
  return kernelVmMissing() === undefined;
}

/** Why the VM cannot run here, or undefined when it can: the message a suite fails or skips with. */
export function kernelVmMissing(): string | undefined {
  if (process.env.PODROUTE_KERNEL_VM === '0') return 'PODROUTE_KERNEL_VM=0 turns the kernel VM suites off';
  if (process.getuid?.() !== 0) return 'the kernel VM needs root';
  const ready = spawnSync('bash', [SCRIPT, '--ready'], { encoding: 'utf8', timeout: 20_000 });
  if (ready.status !== 0)
    return `the kernel VM is not ready (${(ready.stdout || ready.stderr || String(ready.error)).trim()}): run test/ensure-deps.sh (it runs test/support/kernel-vm.sh --prepare)`;
  return undefined;
}

/**
 * Runs `argv` as root under the VM's kernel and resolves with its exit code and output once the VM
 * has stopped. Past `timeoutMs` the VM is killed by its PID and the promise rejects with
 * KernelVmTimeoutError (carrying what output there was).
 */
export function runInKernelVm(argv: string[], opts: KernelVmOptions): Promise<KernelVmResult> {
  if (argv.length === 0) throw new Error('runInKernelVm: argv is empty');
  const ctl = mkdtempSync(join(tmpdir(), 'kvm-run-'));
  const pidfile = join(ctl, 'qemu.pid');
  const seconds = Math.max(1, Math.ceil(opts.timeoutMs / 1000));
  const args = [SCRIPT, '--timeout', String(seconds), '--pidfile', pidfile];
  if (opts.memMb !== undefined) args.push('--mem', String(opts.memMb));
  if (opts.cpus !== undefined) args.push('--cpus', String(opts.cpus));
  if (opts.outDir !== undefined) args.push('--out', opts.outDir);
  const env = Object.entries(opts.env ?? {}).map(([k, v]) => `${k}=${v}`);
  args.push('--', ...(env.length > 0 ? ['env', ...env] : []), ...argv);
  return new Promise((resolve, reject) => {
    const child = spawn('bash', args, { cwd: opts.cwd ?? process.cwd(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    let timedOut = false;
    // The script kills qemu itself at the deadline; this is the backstop should the script hang.
    const backstop = setTimeout(() => {
      timedOut = true;
      killByPidfile(pidfile);
      if (child.pid !== undefined) killQuietly(child.pid);
    }, opts.timeoutMs + 15_000);
    child.on('error', (e) => {
      clearTimeout(backstop);
      rmSync(ctl, { recursive: true, force: true });
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(backstop);
      const qemuPid = readPid(pidfile);
      killByPidfile(pidfile); // a VM whose script died on a signal must not outlive it
      rmSync(ctl, { recursive: true, force: true });
      if (timedOut || (code === 124 && /kernel-vm: killed the VM after/.test(stderr)))
        reject(new KernelVmTimeoutError(opts.timeoutMs, stdout, stderr, qemuPid));
      else resolve({ code: code ?? 128, stdout, stderr });
    });
  });
}

function readPid(pidfile: string): number | undefined {
  try {
    const pid = Number(readFileSync(pidfile, 'utf8').trim());
    return Number.isInteger(pid) && pid > 1 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function killByPidfile(pidfile: string): void {
  const pid = readPid(pidfile);
  if (pid !== undefined && isQemu(pid)) killQuietly(pid);
}

/** Whether the PID names a running qemu: a recycled PID is left alone. */
export function isQemu(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('qemu-system');
  } catch {
    return false;
  }
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
