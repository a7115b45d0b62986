// Real conntrack entries for the ctnetlink tests: a namespace whose own output path DNATs UDP
// frontends (IPv4 and IPv6) to endpoints, and datagrams sent through it, each from a port of its
// own, so each makes one entry. The frontends and endpoints are reached through a veth pair
// whose far end answers nothing: the entries stay (30 s, UNREPLIED) and no server is needed.
import { execFileSync } from 'node:child_process';

const sh = (cmd: string, input?: string): string =>
  execFileSync('sh', ['-c', cmd], { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] });

/** A frontend DNATed to `to` (an endpoint `address:port`, IPv6 in brackets); `dst` absent: any address (a nodePort). */
export interface Dnat {
  readonly family: 4 | 6;
  readonly dst?: string;
  readonly port: number;
  readonly to: string;
}

export class ConntrackLab {
  private constructor(readonly name: string) {}

  /** The path a netlink socket enters. */
  get path(): string {
    return `/var/run/netns/${this.name}`;
  }

  /**
   * A namespace `<tag><pid>` with 10.1.0.1/24 and fd00:1::1/64 on a veth, 10.96.0.0/16 and
   * fd00:96::/64 routed through it, and the DNATs given (nft, output hook).
   */
  static create(tag: string, dnats: readonly Dnat[]): ConntrackLab {
    const name = `${tag}${process.pid}`;
    sh(`ip netns del ${name} 2>/dev/null; ip netns add ${name}`);
    const lab = new ConntrackLab(name);
    try {
      const ip = (args: string) => sh(`ip -n ${name} ${args}`);
      ip('link set lo up');
      // A veth pair (dummy is a module not every kernel has): packets leave by v0 and are lost.
      ip('link add v0 type veth peer name v1');
      ip('link set v0 up');
      ip('link set v1 up');
      ip('addr add 10.1.0.1/24 dev v0');
      ip('addr add fd00:1::1/64 dev v0 nodad');
      ip('route add 10.96.0.0/16 dev v0');
      ip('route add fd00:96::/64 dev v0');
      const rules = dnats.map((d) => {
        const ip = d.family === 4 ? 'ip' : 'ip6';
        return `${d.dst ? `${ip} daddr ${d.dst} ` : `meta nfproto ipv${d.family} `}udp dport ${d.port} dnat ${ip} to ${d.to}`;
      });
      sh(
        `ip netns exec ${name} nft -f -`,
        `table inet lab {\n chain out {\n  type nat hook output priority -100;\n  ${rules.join('\n  ')}\n }\n}\n`,
      );
    } catch (e) {
      lab.destroy();
      throw e;
    }
    return lab;
  }

  /** Sends `count` datagrams to each `host port` from the namespace, each from a new source port (one new entry each). */
  send(targets: readonly { host: string; port: number; count: number }[]): void {
    const lines = targets.map((t) => `for i in $(seq ${t.count}); do echo x > /dev/udp/${t.host}/${t.port}; done`);
    execFileSync('ip', ['netns', 'exec', this.name, 'bash', '-c', lines.join('\n')], { stdio: 'ignore' });
  }

  destroy(): void {
    try {
      sh(`ip netns del ${this.name}`);
    } catch {
      // already gone
    }
  }
}
