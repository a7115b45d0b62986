// A bare BGP session for the tester: connect, OPEN/KEEPALIVE handshake, keepalives on a
// timer, then raw writes of pre-encoded bytes. Received UPDATEs go to a callback unparsed.
import { connect, type Socket } from 'node:net';
import { MessageFramer, decodeMessage } from '../../bgp/codec/index.js';
import { KEEPALIVE, openMessage } from './wire.js';

export interface SessionConfig {
  localAddress: string;
  remoteAddress: string;
  asn: number;
  routerId: string;
  holdTime: number;
}

const UPDATE = 2;
const NOTIFICATION = 3;
const OPEN = 1;

export class TesterSession {
  private socket: Socket | undefined;
  private readonly framer = new MessageFramer();
  private keepalive: NodeJS.Timeout | undefined;
  private state: 'idle' | 'open-sent' | 'open-confirm' | 'established' | 'closed' = 'idle';
  closedReason = '';
  /** Called with every whole UPDATE received once Established. */
  onUpdate: ((message: Buffer) => void) | undefined;

  constructor(readonly config: SessionConfig) {}

  /** Connects (retrying while the daemon is not yet listening) and resolves once Established. */
  async establish(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        await this.tryOnce(Math.max(1000, deadline - Date.now()));
        return;
      } catch (error) {
        this.close();
        if (Date.now() > deadline)
          throw new Error(`${this.config.localAddress} → ${this.config.remoteAddress}: ${(error as Error).message}`);
        await new Promise((r) => setTimeout(r, 500));
        this.state = 'idle';
      }
    }
  }

  private tryOnce(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const c = this.config;
      const socket = connect({ host: c.remoteAddress, port: 179, localAddress: c.localAddress });
      this.socket = socket;
      socket.setNoDelay(true);
      const timer = setTimeout(() => reject(new Error(`no Established within ${timeoutMs} ms (state ${this.state})`)), timeoutMs);
      const fail = (why: string) => {
        clearTimeout(timer);
        this.closedReason ||= why;
        if (this.state !== 'established') reject(new Error(why));
        this.close();
      };
      socket.on('error', (e) => fail(e.message));
      socket.on('close', () => fail('connection closed'));
      socket.on('connect', () => {
        this.state = 'open-sent';
        socket.write(openMessage(c.asn, c.routerId, c.holdTime));
      });
      socket.on('data', (chunk: Buffer) => {
        let messages: Buffer[];
        try {
          messages = this.framer.push(chunk);
        } catch (e) {
          fail(`bad framing: ${(e as Error).message}`);
          return;
        }
        for (const m of messages) {
          const type = m[18];
          if (type === UPDATE) {
            this.onUpdate?.(m);
          } else if (type === NOTIFICATION) {
            const n = decodeMessage(m);
            fail(`NOTIFICATION ${JSON.stringify(n, (k, v) => (k === 'data' ? undefined : v))}`);
            return;
          } else if (type === OPEN && this.state === 'open-sent') {
            const open = decodeMessage(m);
            const hold = open.type === 'open' ? Math.min(open.holdTime, c.holdTime) : c.holdTime;
            socket.write(KEEPALIVE);
            this.state = 'open-confirm';
            if (hold > 0) this.keepalive = setInterval(() => this.socket?.write(KEEPALIVE), (hold * 1000) / 3);
          } else if (type === 4 && this.state === 'open-confirm') {
            this.state = 'established';
            clearTimeout(timer);
            resolve();
          }
        }
      });
    });
  }

  get established(): boolean {
    return this.state === 'established';
  }

  /** Writes the bytes; resolves with performance.now() once the kernel has taken them all. */
  send(bytes: Buffer): Promise<number> {
    return new Promise((resolve, reject) => {
      if (!this.socket || this.state !== 'established') {
        reject(new Error(`${this.config.localAddress}: session not Established (${this.closedReason})`));
        return;
      }
      this.socket.write(bytes, (error) => (error ? reject(error) : resolve(performance.now())));
    });
  }

  close(): void {
    if (this.keepalive) clearInterval(this.keepalive);
    this.keepalive = undefined;
    this.state = 'closed';
    this.socket?.destroy();
  }
}
