// Real conntrack entries for the ctnetlink tests: a namespace whose own output path DNATs UDP
// frontends (IPv4 and IPv6) to endpoints, and datagrams sent through it, each from a port of its
// own, so each makes one entry. The frontends and endpoints are reached through a veth pair
// whose far end answers nothing: the entries stay (30 s, UNREPLIED) and no server is needed.
import { execFileSync } from 'node:child_process';
import { parseAddress } from '../../ip/index.js';
import { AF_INET, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST } from '../../felix/netlink/constants.js';
import {
  CTA_IP_V4_DST,
  CTA_IP_V4_SRC,
  CTA_PROTO_DST_PORT,
  CTA_PROTO_NUM,
  CTA_PROTO_SRC_PORT,
  CTA_TUPLE_IP,
  CTA_TUPLE_ORIG,
  CTA_TUPLE_PROTO,
  CTA_TUPLE_REPLY,
  IPCTNL_MSG_CT_NEW,
  IPPROTO_UDP,
  ctMsg,
} from '../../felix/netlink/ctnetlink.js';
import { NETLINK_NETFILTER } from '../../felix/netlink/nf-constants.js';
import { NetlinkSocket } from '../../felix/netlink/socket.js';
import type { MessageWriter } from '../../felix/netlink/writer.js';

const CTA_TIMEOUT = 7;

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

  /**
   * Makes `count` UDP entries to `dst port`, DNATed to `to toPort`, from as many clients (10.2.0.0/16,
   * then the next source port), over ctnetlink: a table of a busy node's size in a fraction of a
   * second, where a datagram each would take minutes. They live `timeoutS` seconds.
   */
  async insert(count: number, to: { dst: string; port: number; endpoint: string; endpointPort: number }, timeoutS = 60): Promise<void> {
    const socket = NetlinkSocket.open({ protocol: NETLINK_NETFILTER, netns: this.path, ackMode: 'errors', bufferBytes: 8 << 20 });
    try {
      const w = socket.writer(count * 128);
      const dst = parseAddress(to.dst).bytes;
      const endpoint = parseAddress(to.endpoint).bytes;
      for (let i = 0; i < count; i++) {
        const client = Uint8Array.of(10, 2, (i >> 8) & 255, i & 255);
        const clientPort = 20000 + (i >> 16);
        w.begin(ctMsg(IPCTNL_MSG_CT_NEW), NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
        w.u8(AF_INET);
        w.u8(0);
        w.u16(0);
        tuple(w, CTA_TUPLE_ORIG, client, clientPort, dst, to.port);
        tuple(w, CTA_TUPLE_REPLY, endpoint, to.endpointPort, client, clientPort);
        w.attrU32(CTA_TIMEOUT, 0);
        w.buf.writeUInt32BE(timeoutS, w.len - 4);
        w.end();
      }
      const { errors } = await socket.execute(w);
      const failed = errors.findIndex((e) => e !== 0);
      if (failed >= 0) throw new Error(`conntrack entry ${failed} of ${count} not made: errno ${errors[failed]}`);
    } finally {
      socket.close();
    }
  }

  destroy(): void {
    try {
      sh(`ip netns del ${this.name}`);
    } catch {
      // already gone
    }
  }
}

function tuple(w: MessageWriter, type: number, src: Uint8Array, srcPort: number, dst: Uint8Array, dstPort: number): void {
  w.nestBegin(type);
  w.nestBegin(CTA_TUPLE_IP);
  w.attrBytes(CTA_IP_V4_SRC, src);
  w.attrBytes(CTA_IP_V4_DST, dst);
  w.nestEnd();
  w.nestBegin(CTA_TUPLE_PROTO);
  w.attrU8(CTA_PROTO_NUM, IPPROTO_UDP);
  w.attrU16BE(CTA_PROTO_SRC_PORT, srcPort);
  w.attrU16BE(CTA_PROTO_DST_PORT, dstPort);
  w.nestEnd();
  w.nestEnd();
}
