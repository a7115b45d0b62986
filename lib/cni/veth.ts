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
//
// The host end's name comes from the pod (namespace.pod), so two sandboxes of one pod want the
// same name. Its alias (IFLA_IFALIAS) records the container ID whose sandbox it serves, so a
// call for another sandbox can tell the veth is not its own.
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

/** The host end's alias: this prefix and the container ID (cut to the kernel's 255 bytes, which no runtime's IDs reach). */
const OWNER_PREFIX = 'podroute-cni ';
const ownerMark = (containerId: string): string => `${OWNER_PREFIX}${containerId}`.slice(0, 255);

/** A host end as the kernel has it. */
export interface HostLink {
  /** The container ID its alias names; undefined when it has none of ours (a veth made before owners were marked). */
  owner?: string;
  /** The pod end: its namespace's ID as this namespace knows it, and its ifindex there. */
  peer?: { netnsid: number; ifindex: number };
}

/** Is `link` the sandbox of `containerId`'s (as far as its mark says: undefined when unmarked)? */
export function ownedBy(link: HostLink, containerId: string): boolean | undefined {
  return link.owner === undefined ? undefined : ownerMark(link.owner) === ownerMark(containerId);
}

function parseHostLink(j: { ifalias?: string; link_netnsid?: number; link_index?: number }): HostLink {
  const alias = j.ifalias ?? '';
  const out: HostLink = {};
  if (alias.startsWith(OWNER_PREFIX) && alias.length > OWNER_PREFIX.length) out.owner = alias.slice(OWNER_PREFIX.length);
  if (typeof j.link_netnsid === 'number' && typeof j.link_index === 'number') out.peer = { netnsid: j.link_netnsid, ifindex: j.link_index };
  return out;
}

/** The host end named `name`, or undefined when there is none. */
export async function hostLink(name: string): Promise<HostLink | undefined> {
  const r = await run(['ip', '-j', 'link', 'show', 'dev', name]);
  if (r.code !== 0) return undefined;
  const [j] = JSON.parse(r.stdout) as { ifalias?: string; link_netnsid?: number; link_index?: number }[];
  return j ? parseHostLink(j) : undefined;
}

/** Every link of this namespace, by name (one `ip` for any number of endpoints). */
export async function hostLinks(): Promise<Map<string, HostLink>> {
  const out = await must(['ip', '-j', 'link', 'show']);
  const links = JSON.parse(out) as { ifname: string; ifalias?: string; link_netnsid?: number; link_index?: number }[];
  return new Map(links.map((j) => [j.ifname, parseHostLink(j)]));
}

/** The named namespaces (`ip netns`) this namespace has an ID for, by that ID. */
export async function namedNetnsIds(): Promise<Map<number, string>> {
  const r = await run(['ip', '-j', 'netns', 'list-id']);
  if (r.code !== 0 || !r.stdout.trim()) return new Map();
  const ids = JSON.parse(r.stdout) as { nsid: number; name?: string }[];
  return new Map(ids.filter((i) => i.name).map((i) => [i.nsid, i.name!]));
}

/** The global addresses of every interface in a named namespace, by ifindex, as ip/len. */
export async function addressesIn(netnsName: string): Promise<Map<number, string[]>> {
  const r = await run(['ip', '-n', netnsName, '-j', 'addr', 'show']);
  if (r.code !== 0) return new Map();
  const links = JSON.parse(r.stdout) as { ifindex: number; addr_info?: { local: string; prefixlen: number; scope: string }[] }[];
  return new Map(
    links.map((l) => [l.ifindex, (l.addr_info ?? []).filter((a) => a.scope === 'global').map((a) => `${a.local}/${a.prefixlen}`)]),
  );
}

/**
 * Deletes the pod end `podIf` inside the sandbox's namespace, and with it the pair, whatever the
 * host end is called: the namespace is the sandbox's own, so nothing of another sandbox goes.
 * False when there was none.
 */
export async function deletePodEnd(netns: string, podIf: string): Promise<boolean> {
  const r = await run(['nsenter', `--net=${netns}`, 'ip', 'link', 'del', 'dev', podIf]);
  return r.code === 0;
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
  /** The container ID whose sandbox this is, recorded on the host end. */
  owner: string;
}): Promise<VethResult> {
  const { host, podIf, netns, addresses } = opts;
  const v4 = addresses.filter((a) => !a.includes(':'));
  const v6 = addresses.filter((a) => a.includes(':'));
  const mtu = opts.mtu ? ['mtu', String(opts.mtu)] : [];
  // Every process costs a CNI ADD its start-up, so the host end is created already up, and the
  // pod end is configured and read back in one batch. The pod end has no address until that
  // batch, so the host end answers no ARP before proxy_arp is on. The kernel takes no alias when
  // it creates a link, so the owner is set in the same `ip` right after.
  const add = ['link', 'add', host, 'up', ...mtu, 'address', HOST_MAC, 'type', 'veth', 'peer', 'name', podIf, ...mtu, 'netns', netns];
  const made = await run(['ip', '-batch', '-'], `${add.join(' ')}\nlink set dev ${host} alias "${ownerMark(opts.owner)}"\n`);
  if (made.code !== 0) {
    if (made.stderr.includes('-:2')) await deleteLink(host);
    throw new Error(`ip ${add.join(' ')}: ${made.stderr.trim().split('\n')[0] || `exit ${made.code}`}`);
  }
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
