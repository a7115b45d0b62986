// A BGP peer with no logic: it sends exactly what a test tells it to and keeps every message it
// receives, decoded, so a test can script an exchange message by message and read the reply
// off the wire.
import net from 'node:net';
import { MessageFramer, decodeMessage, encodeMessage, type BgpMessage, type NotificationMessage } from '../../index.js';
import { waitFor } from './wait.js';

export class RawPeer {
  readonly received: BgpMessage[] = [];
  closed = false;
  private readonly framer = new MessageFramer();
  constructor(readonly socket: net.Socket) {
    socket.on('data', (c: Buffer) => {
      for (const m of this.framer.push(c)) this.received.push(decodeMessage(m));
    });
    socket.on('close', () => (this.closed = true));
    socket.on('error', () => undefined);
  }

  static connect(host: string, port: number, localAddress: string): Promise<RawPeer> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host, port, localAddress }, () => resolve(new RawPeer(s)));
      s.once('error', reject);
    });
  }

  send(m: BgpMessage | Buffer): void {
    this.socket.write(Buffer.isBuffer(m) ? m : encodeMessage(m));
  }

  /** An OPEN for IPv4 unicast with 4-octet AS; `extra` capabilities are appended. */
  open(asn: number, id: string, holdTime = 9, extra: Extract<BgpMessage, { type: 'open' }>['capabilities'] = []): void {
    this.send({
      type: 'open',
      version: 4,
      myAs: asn,
      holdTime,
      bgpId: id,
      capabilities: [{ kind: 'four-octet-as', asn }, { kind: 'multiprotocol', afi: 1, safi: 1 }, ...extra],
    });
  }

  /** The first message of `type` received, waited for. */
  message<T extends BgpMessage['type']>(type: T, timeoutMs = 15_000): Promise<Extract<BgpMessage, { type: T }>> {
    return waitFor(() => this.received.find((m): m is Extract<BgpMessage, { type: T }> => m.type === type), {
      what: `a ${type.toUpperCase()} from the speaker`,
      until: (m) => m !== undefined,
      timeoutMs,
      intervalMs: 10,
    }) as Promise<Extract<BgpMessage, { type: T }>>;
  }

  notification(): Promise<NotificationMessage> {
    return this.message('notification');
  }

  destroy(): void {
    this.socket.destroy();
  }
}
