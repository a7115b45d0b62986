// The runner's handle on the tester process: started inside the testers' namespace with an IPC
// channel, one command at a time.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Netns } from '../../test/support/netns.js';
import type { TesterCommand, TesterReply } from './tester.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TESTER = fileURLToPath(new URL('./tester.ts', import.meta.url));

export class TesterProcess {
  private readonly child: ChildProcess;
  private waiting: ((m: TesterReply) => void) | undefined;
  private exited = false;

  constructor(ns: Netns) {
    this.child = spawn('ip', ['netns', 'exec', ns.name, process.execPath, '--import', 'tsx', '--max-old-space-size=6144', TESTER], {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (m: TesterReply) => this.waiting?.(m));
    this.child.on('exit', (code, signal) => {
      this.exited = true;
      this.waiting?.({ ev: 'error', message: `tester process exited (${code ?? signal})` });
    });
    // The lab deletes the namespace; the tester must be gone first.
    ns.lab.onDestroy(() => this.kill());
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Sends a command and resolves with the reply; an error reply throws. */
  async call<E extends TesterReply['ev']>(
    command: TesterCommand,
    expected: E,
    timeoutMs: number,
  ): Promise<Extract<TesterReply, { ev: E }>> {
    if (this.exited) throw new Error('tester process is not running');
    const reply = await new Promise<TesterReply>((resolve) => {
      const timer = setTimeout(() => resolve({ ev: 'error', message: `no reply to ${command.op} within ${timeoutMs} ms` }), timeoutMs);
      this.waiting = (m) => {
        clearTimeout(timer);
        this.waiting = undefined;
        resolve(m);
      };
      this.child.send(command);
    });
    if (reply.ev === 'error') throw new Error(`tester: ${reply.message}`);
    if (reply.ev !== expected) throw new Error(`tester: expected ${expected}, got ${reply.ev}`);
    return reply as Extract<TesterReply, { ev: E }>;
  }

  async kill(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGKILL');
    await Promise.race([gone, new Promise((r) => setTimeout(r, 2000))]);
  }
}
