// Captured TCP connections read as BGP sessions: each direction framed into messages, the
// OPENs found, and every message decoded with the options the two OPENs negotiated.
import { MessageFramer, decodeMessage, negotiatedOptions, type BgpMessage, type CodecOptions, type OpenMessage } from '../../bgp/index.js';
import type { Endpoint, TcpConnection, TcpStream } from './pcap.js';

export interface CapturedMessage {
  raw: Buffer;
  /** undefined when decoding threw; `error` says why. */
  message: BgpMessage | undefined;
  error?: Error;
}

export interface CapturedDirection {
  from: Endpoint;
  to: Endpoint;
  stream: TcpStream;
  /** The options this direction is decoded with (sender's view of the negotiation). */
  options: CodecOptions;
  open: OpenMessage | undefined;
  messages: CapturedMessage[];
  /** Bytes after the last whole message (a connection cut mid-message). */
  trailing: number;
  framingError?: Error;
}

export interface CapturedSession {
  connection: TcpConnection;
  client: CapturedDirection;
  server: CapturedDirection;
}

function frame(stream: TcpStream): { raws: Buffer[]; trailing: number; error?: Error } {
  // 65535: any length the extended message capability allows; whether it was allowed is the
  // test's to check.
  const framer = new MessageFramer({ maxLength: 65535 });
  try {
    const raws = framer.push(stream.bytes);
    return { raws, trailing: framer.buffered };
  } catch (error) {
    return { raws: [], trailing: stream.bytes.length, error: error as Error };
  }
}

function firstOpen(raws: Buffer[]): OpenMessage | undefined {
  if (raws.length === 0) return undefined;
  try {
    const m = decodeMessage(raws[0]!);
    return m.type === 'open' ? m : undefined;
  } catch {
    return undefined;
  }
}

export function decodeSession(connection: TcpConnection): CapturedSession {
  const c = frame(connection.clientToServer);
  const s = frame(connection.serverToClient);
  const clientOpen = firstOpen(c.raws);
  const serverOpen = firstOpen(s.raws);
  const negotiated = clientOpen && serverOpen ? negotiatedOptions(clientOpen, serverOpen) : undefined;
  const direction = (
    stream: TcpStream,
    framed: ReturnType<typeof frame>,
    open: OpenMessage | undefined,
    options: CodecOptions,
  ): CapturedDirection => ({
    from: stream.from,
    to: stream.to,
    stream,
    options,
    open,
    trailing: framed.trailing,
    ...(framed.error ? { framingError: framed.error } : {}),
    messages: framed.raws.map((raw) => {
      try {
        return { raw, message: decodeMessage(raw, options) };
      } catch (error) {
        return { raw, message: undefined, error: error as Error };
      }
    }),
  });
  return {
    connection,
    client: direction(connection.clientToServer, c, clientOpen, negotiated?.send ?? {}),
    server: direction(connection.serverToClient, s, serverOpen, negotiated?.receive ?? {}),
  };
}

/** Messages of one type sent in this direction. */
export function messagesOfType<T extends BgpMessage['type']>(direction: CapturedDirection, type: T): Extract<BgpMessage, { type: T }>[] {
  return direction.messages.map((m) => m.message).filter((m): m is Extract<BgpMessage, { type: T }> => m?.type === type);
}
