// The pod's link, made with iproute2 as Calico's CNI plugin makes it with netlink: a veth
// pair, host end `cali<hash>` (MAC ee:ee:ee:ee:ee:ee, proxy-ARP on), pod end renamed to
// CNI_IFNAME inside the pod's namespace with the address as a /32 and a default route via
// 169.254.1.1, which the host end answers by proxy-ARP.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';

export const GATEWAY = '169.254.1.1';
export const HOST_MAC = 'ee:ee:ee:ee:ee:ee';

/** `cali` + 11 hex digits of a hash of the workload: 15 characters, the Linux limit. */
export function hostVethName(workload: string): string {
  return `cali${createHash('sha1').update(workload).digest('hex').slice(0, 11)}`;
}

function run(argv: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(argv[0]!, argv.slice(1), { timeout: 10_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

async function must(argv: string[], input?: string): Promise<string> {
  const r = await run(argv, input);
  if (r.code !== 0) throw new Error(`${argv.join(' ')}: ${r.stderr.trim() || `exit ${r.code}`}`);
  return r.stdout;
}

export function linkExists(name: string): Promise<boolean> {
  return run(['ip', 'link', 'show', 'dev', name]).then((r) => r.code === 0);
}

export async function deleteLink(name: string): Promise<boolean> {
  const r = await run(['ip', 'link', 'del', 'dev', name]);
  return r.code === 0;
}

function sysctl(path: string, value: string): void {
  writeFileSync(path, value);
}

export interface VethResult {
  hostMac: string;
  podMac: string;
}

/** Creates the pair and configures both ends; on any failure the pair is deleted again. */
export async function createVeth(opts: { host: string; podIf: string; netns: string; address: string; mtu?: number }): Promise<VethResult> {
  const { host, podIf, netns, address } = opts;
  const mtu = opts.mtu ? ['mtu', String(opts.mtu)] : [];
  // Every process costs a CNI ADD its start-up, so the host end is created already up, and the
  // pod end is configured and read back in one batch. The pod end has no address until that
  // batch, so the host end answers no ARP before proxy_arp is on.
  await must(['ip', 'link', 'add', host, 'up', ...mtu, 'address', HOST_MAC, 'type', 'veth', 'peer', 'name', podIf, ...mtu, 'netns', netns]);
  try {
    const conf = `/proc/sys/net/ipv4/conf/${host}`;
    if (existsSync(conf)) {
      sysctl(`${conf}/proxy_arp`, '1');
      sysctl(`/proc/sys/net/ipv4/neigh/${host}/proxy_delay`, '0');
      sysctl(`${conf}/forwarding`, '1');
    }
    const batch =
      [
        `addr add ${address} dev ${podIf}`,
        `link set ${podIf} up`,
        `route add ${GATEWAY} dev ${podIf} scope link`,
        `route add default via ${GATEWAY} dev ${podIf}`,
        `link show dev ${podIf}`,
      ].join('\n') + '\n';
    const shown = await must(['nsenter', `--net=${netns}`, 'ip', '-o', '-batch', '-'], batch);
    const podMac = /link\/ether ([0-9a-f:]{17})/.exec(shown)?.[1] ?? '';
    return { hostMac: HOST_MAC, podMac };
  } catch (e) {
    await deleteLink(host);
    throw e;
  }
}

export async function linkMac(name: string, netns?: string): Promise<string> {
  const argv = ['ip', '-o', 'link', 'show', 'dev', name];
  const out = await must(netns ? ['nsenter', `--net=${netns}`, ...argv] : argv);
  return /link\/ether ([0-9a-f:]{17})/.exec(out)?.[1] ?? '';
}

/** The IPv4 addresses on an interface inside a namespace, as ip/len. */
export async function podAddresses(netns: string, podIf: string): Promise<string[]> {
  const r = await run(['nsenter', `--net=${netns}`, 'ip', '-o', '-4', 'addr', 'show', 'dev', podIf]);
  if (r.code !== 0) return [];
  return [...r.stdout.matchAll(/inet (\S+)/g)].map((m) => m[1]!);
}

export async function podDefaultRoute(netns: string): Promise<string> {
  const r = await run(['nsenter', `--net=${netns}`, 'ip', 'route', 'show', 'default']);
  return r.stdout.trim();
}
