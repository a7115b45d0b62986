// The container engine, through the docker CLI: the engine is named by its socket (`-H`), never
// by whatever the environment points the CLI at, so a lab always talks to the engine it was
// built on. Every call has a deadline.
import { execCommand, run, type ExecResult } from './system.js';

/** The engine a lab runs on: `-H` for the docker CLI (unix:///run/docker.sock, tcp://...). */
export function dockerHost(explicit?: string): string {
  return explicit ?? process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock';
}

export const dockerArgv = (host: string, args: readonly string[]): string[] => ['docker', '-H', host, ...args];

export function docker(host: string, args: readonly string[], options: { input?: string; timeoutMs?: number } = {}): Promise<string> {
  return run(dockerArgv(host, args), { timeoutMs: 60_000, ...options });
}

export function dockerResult(
  host: string,
  args: readonly string[],
  options: { input?: string; timeoutMs?: number } = {},
): Promise<ExecResult> {
  return execCommand(dockerArgv(host, args), { timeoutMs: 60_000, ...options });
}

export interface ContainerInfo {
  id: string;
  running: boolean;
  /** The container's first process, as the host sees it (0 when stopped). */
  pid: number;
  image: string;
}

/** The container named `name`, or undefined when there is none. */
export async function inspectContainer(host: string, name: string): Promise<ContainerInfo | undefined> {
  const r = await dockerResult(
    host,
    ['container', 'inspect', '--format', '{{.Id}} {{.State.Running}} {{.State.Pid}} {{.Config.Image}}', name],
    {
      timeoutMs: 15_000,
    },
  );
  if (r.code !== 0) {
    if (/no such (container|object)/i.test(r.stderr)) return undefined;
    throw new Error(`docker inspect ${name}: ${r.stderr.trim()}`);
  }
  const [id, running, pid, image] = r.stdout.trim().split(' ');
  return { id: id!, running: running === 'true', pid: Number(pid), image: image! };
}

/** True when the engine answers. */
export async function engineAnswers(host: string): Promise<boolean> {
  return (await dockerResult(host, ['version', '--format', '{{.Server.Version}}'], { timeoutMs: 10_000 })).code === 0;
}

export async function imageExists(host: string, image: string): Promise<boolean> {
  return (await dockerResult(host, ['image', 'inspect', '--format', '{{.Id}}', image], { timeoutMs: 15_000 })).code === 0;
}
