// The pod's link, made with iproute2 as Calico's CNI plugin makes it with netlink: a veth
// pair, host end `cali<hash>` (MAC ee:ee:ee:ee:ee:ee, proxy-ARP on), pod end renamed to
// CNI_IFNAME inside the pod's namespace with the address as a /32 and a default route via
// 169.254.1.1, which the host end answers by proxy-ARP.
//
// IPv6: the pod's address as a /128 and a default route via fe80::ecee:eeff:feee:eeee, which
// is the host end's own EUI-64 link-local address (derived from ee:ee:ee:ee:ee:ee). The pod
// gets a permanent neighbour entry for it, so it never has to solicit the gateway: nothing is
// needed on the host but IPv6 on the host end (no proxy-NDP, which wants one entry per
// address, and no wait for the host end's link-local address to pass DAD).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';

export const GATEWAY = '169.254.1.1';
export const GATEWAY_V6 = 'fe80::ecee:eeff:feee:eeee';

/** The pod's gateway for an address: ip/len with a colon is IPv6. */
export const gatewayFor = (address: string): string => (address.includes(':') ? GATEWAY_V6 : GATEWAY);
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
export async function createVeth(opts: {
  host: string;
  podIf: string;
  netns: string;
  /** One or two (one of each family), as ip/32 and ip/128. */
  addresses: readonly string[];
  mtu?: number;
}): Promise<VethResult> {
  const { host, podIf, netns, addresses } = opts;
  const v4 = addresses.filter((a) => !a.includes(':'));
  const v6 = addresses.filter((a) => a.includes(':'));
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
    const conf6 = `/proc/sys/net/ipv6/conf/${host}`;
    if (v6.length > 0) {
      if (!existsSync(conf6))
        throw new Error('IPv6 is disabled in this kernel (no /proc/sys/net/ipv6): the pod cannot have an IPv6 address');
      // Before the pod end comes up, so the host end's link-local address (the pod's gateway)
      // is usable at once instead of after DAD. IPv6 forwarding is the node agent's to set.
      sysctl(`${conf6}/accept_dad`, '0');
      sysctl(`${conf6}/disable_ipv6`, '0');
    }
    const lines = [...addresses.map((a) => `addr add ${a} dev ${podIf}${a.includes(':') ? ' nodad' : ''}`), `link set ${podIf} up`];
    if (v4.length > 0) lines.push(`route add ${GATEWAY} dev ${podIf} scope link`, `route add default via ${GATEWAY} dev ${podIf}`);
    if (v6.length > 0)
      lines.push(
        `neigh replace ${GATEWAY_V6} lladdr ${HOST_MAC} dev ${podIf} nud permanent`,
        `route add ::/0 via ${GATEWAY_V6} dev ${podIf}`,
      );
    lines.push(`link show dev ${podIf}`);
    const batch = lines.join('\n') + '\n';
    // A new namespace may start with IPv6 off; its /proc/sys/net is the namespace's own.
    const argv =
      v6.length > 0
        ? [
            'nsenter',
            `--net=${netns}`,
            'sh',
            '-c',
            'for f in all default lo; do echo 0 > /proc/sys/net/ipv6/conf/$f/disable_ipv6 || exit 1; done; exec ip -o -batch -',
          ]
        : ['nsenter', `--net=${netns}`, 'ip', '-o', '-batch', '-'];
    const shown = await must(argv, batch);
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

/** The global IPv4 and IPv6 addresses on an interface inside a namespace, as ip/len. */
export async function podAddresses(netns: string, podIf: string): Promise<string[]> {
  const r = await run(['nsenter', `--net=${netns}`, 'ip', '-o', 'addr', 'show', 'dev', podIf, 'scope', 'global']);
  if (r.code !== 0) return [];
  return [...r.stdout.matchAll(/inet6? (\S+)/g)].map((m) => m[1]!);
}

export async function podDefaultRoute(netns: string, family: 4 | 6 = 4): Promise<string> {
  const r = await run(['nsenter', `--net=${netns}`, 'ip', `-${family}`, 'route', 'show', 'default']);
  return r.stdout.trim();
}
