// Live packet capture inside a namespace: dumpcap (tshark's capture engine, one process, so
// one PID to stop) writes libpcap; pcap.ts turns the file into reassembled TCP streams.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Netns } from './netns.js';
import type { ManagedProcess } from './process.js';
import { readTcpConnections, type TcpConnection } from './pcap.js';
import { waitFor } from './wait.js';

export interface CaptureOptions {
  /** Interface inside the namespace (default eth0). */
  interface?: string;
  /** Capture filter in pcap syntax (default: BGP, "tcp port 179"). */
  filter?: string;
  /** File name stem inside the lab directory. */
  name?: string;
}

export class PacketCapture {
  private stopped = false;
  private constructor(
    readonly ns: Netns,
    readonly file: string,
    readonly process: ManagedProcess,
  ) {}

  /** Starts capturing and resolves once the interface is open, so nothing sent later is missed. */
  static async start(ns: Netns, options: CaptureOptions = {}): Promise<PacketCapture> {
    const ifname = options.interface ?? 'eth0';
    const file = join(ns.lab.dir, `${options.name ?? `${ns.shortName}-${ifname}`}.pcap`);
    // -P: libpcap format (not pcapng). Snap length default (256 KB)
    // exceeds any BGP segment.
    const process = ns.spawn(['dumpcap', '-P', '-i', ifname, '-f', options.filter ?? 'tcp port 179', '-w', file], {
      name: `dumpcap-${options.name ?? ifname}`,
    });
    const capture = new PacketCapture(ns, file, process);
    ns.lab.onDestroy(() => capture.stop());
    await waitFor(
      () => {
        if (!process.running) throw new Error(`dumpcap exited: ${process.tail()}`);
        return /Capturing on/.test(process.tail()) && existsSync(file);
      },
      { what: `dumpcap on ${ns.shortName}/${ifname} to open the interface`, timeoutMs: 15_000, intervalMs: 50 },
    );
    return capture;
  }

  /** Stops the capture; dumpcap flushes its file on SIGINT. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.process.stop(5000, 'SIGINT');
  }

  /** Bytes written so far (dumpcap writes as it goes, in buffered blocks). */
  get size(): number {
    return existsSync(this.file) ? statSync(this.file).size : 0;
  }

  /**
   * Waits until the connections captured so far satisfy `until` (e.g. a NOTIFICATION has been
   * seen and the connection closed). Waiting on the file itself is what makes stop() safe:
   * dumpcap drops what is still in the kernel's capture ring when it is interrupted.
   */
  async waitFor(what: string, until: (connections: TcpConnection[]) => boolean, timeoutMs = 15_000): Promise<TcpConnection[]> {
    return waitFor(() => readTcpConnections(this.file, { partial: true }), {
      what: `capture ${this.file}: ${what}`,
      until,
      timeoutMs,
      intervalMs: 200,
    });
  }

  /** Stops the capture if needed, then reads and reassembles every TCP connection in it. */
  async connections(): Promise<TcpConnection[]> {
    await this.stop();
    return readTcpConnections(this.file);
  }
}

/**
 * Connections of several captures merged: a connection captured at both ends (same client
 * port, server port and addresses, same start within a second) is kept once.
 */
export function uniqueConnections(lists: TcpConnection[][]): TcpConnection[] {
  const seen = new Map<string, TcpConnection>();
  for (const list of lists) {
    for (const c of list) {
      const id = `${c.client.address}|${c.client.port}|${c.server.address}|${c.server.port}`;
      const previous = seen.get(id);
      if (!previous || Math.abs(previous.startUs - c.startUs) > 1e6) seen.set(previous ? `${id}|${c.startUs}` : id, c);
    }
  }
  return [...seen.values()];
}
