// Network namespaces for felix's kernel tests: named with the test's pid so parallel runs
// never collide, and all removed by cleanup().
import { execFileSync } from 'node:child_process';

export function sh(cmd: string): string {
  return execFileSync('sh', ['-c', cmd], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

export function trySh(cmd: string): { ok: boolean; out: string } {
  try {
    return { ok: true, out: sh(cmd) };
  } catch (e) {
    return { ok: false, out: String((e as { stderr?: string }).stderr ?? e) };
  }
}

export class Namespaces {
  private readonly made: string[] = [];
  constructor(private readonly prefix: string) {}

  /** Creates namespace `<prefix><pid><tag>` with lo up; returns its name. */
  add(tag: string): string {
    const name = `${this.prefix}${process.pid}${tag}`;
    sh(`ip netns add ${name} && ip -n ${name} link set lo up`);
    this.made.push(name);
    return name;
  }

  path(name: string): string {
    return `/var/run/netns/${name}`;
  }

  cleanup(): void {
    for (const n of this.made.splice(0).reverse()) trySh(`ip netns del ${n}`);
  }
}

export interface IpRouteJson {
  dst: string;
  type?: string;
  gateway?: string;
  dev?: string;
  protocol?: string;
  flags?: string[];
  nexthops?: { gateway?: string; dev: string; flags?: string[] }[];
}

/** `ip -j route` of a protocol in a namespace, as felix Route values (dst with length). */
export function kernelRoutes(
  ns: string,
  family: 4 | 6,
  proto: string | number,
): { dst: string; type: string; nextHops: { dev: string; gateway?: string; onlink?: boolean }[] }[] {
  const list = JSON.parse(sh(`ip -${family} -n ${ns} -j route show proto ${proto}`)) as IpRouteJson[];
  const hop = (h: { gateway?: string; dev?: string; flags?: string[] }) => {
    const out: { dev: string; gateway?: string; onlink?: boolean } = { dev: h.dev ?? '' };
    if (h.gateway) out.gateway = h.gateway;
    if (h.flags?.includes('onlink')) out.onlink = true;
    return out;
  };
  return list
    .map((r) => {
      const dst = r.dst.includes('/') ? r.dst : `${r.dst}/${family === 4 ? 32 : 128}`;
      if (r.type === 'blackhole') return { dst, type: 'blackhole', nextHops: [] };
      const hops = r.nexthops;
      return { dst, type: 'unicast', nextHops: hops ? hops.map(hop) : [hop(r)] };
    })
    .sort((a, b) => (a.dst < b.dst ? -1 : 1));
}
