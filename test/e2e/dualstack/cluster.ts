// What the dual-stack suites read of their cluster (test/support/node-agents.ts's AgentCluster):
// the kernel's routes of either family, and pings between pods over each family.
import type { Netns } from '../../support/netns.js';
import type { AgentProcess } from '../../support/node-agents.js';

/** An agent started with an IPv6 address (or, on eth0, one to be given later). */
export type Agent6 = AgentProcess & { ip6: string };

/** `ip route` lines of podroute's protocol (81) in a namespace's kernel, of one family. */
export async function ourRoutes(ns: Netns, family: '-4' | '-6'): Promise<string[]> {
  return (await ns.ip(family, 'route', 'show', 'proto', '81'))
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}

interface Pingable {
  name: string;
  ns: Netns;
  ip?: string;
  ip6: string;
}

/** Each pod pings each other one over each family asked for; what did not answer, and why. */
export async function pingFailures(pods: readonly Pingable[], families: readonly (4 | 6)[] = [6]): Promise<string[]> {
  const failures: string[] = [];
  for (const from of pods) {
    for (const to of pods) {
      if (from === to) continue;
      for (const family of families) {
        const address = family === 6 ? to.ip6 : to.ip;
        if (!address) throw new Error(`${to.name} has no IPv${family} address to ping`);
        const r = await from.ns.exec(['ping', `-${family}`, '-c', '1', '-W', '2', address]);
        if (r.code !== 0) failures.push(`${from.name} -> ${to.name} ${address}: ${r.stdout}${r.stderr}`);
      }
    }
  }
  return failures;
}
