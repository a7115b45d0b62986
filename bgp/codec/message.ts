// The message header (RFC 4271 §4.1) and the two entry points of the codec.
import {
  ErrorCode,
  HEADER_LENGTH,
  HeaderSubcode,
  MAX_EXTENDED_MESSAGE_LENGTH,
  MAX_MESSAGE_LENGTH,
  MessageType,
  ROUTE_REFRESH_INVALID_LENGTH,
} from './constants.js';
import { BgpError } from './errors.js';
import { decodeNotification, encodeNotification } from './notification.js';
import { decodeOpen, encodeOpen } from './open.js';
import { decodeRouteRefresh, encodeRouteRefresh } from './route-refresh.js';
import type { BgpMessage, CodecOptions, UpdateMessage } from './types.js';
import { decodeReceivedUpdate, type ReceivedUpdate, writeUpdate } from './update.js';
import { Writer } from './writer.js';

/** The smallest valid length of each message type (RFC 4271 §4, RFC 2918 §3). */
const MIN_LENGTH: Record<number, number> = {
  [MessageType.OPEN]: 29,
  [MessageType.UPDATE]: 23,
  [MessageType.NOTIFICATION]: 21,
  [MessageType.KEEPALIVE]: 19,
  [MessageType.ROUTE_REFRESH]: 23,
};

export function maxMessageLength(options: CodecOptions = {}): number {
  return options.extendedMessage ? MAX_EXTENDED_MESSAGE_LENGTH : MAX_MESSAGE_LENGTH;
}

function lengthError(length: number, why: string): BgpError {
  const data = Buffer.alloc(2);
  data.writeUInt16BE(Math.min(length, 0xffff));
  return new BgpError(`message length ${length}: ${why}`, ErrorCode.MESSAGE_HEADER, HeaderSubcode.BAD_MESSAGE_LENGTH, data);
}

/**
 * Checks the header at b[pos]: the marker and the length. Returns the message length.
 * The framer calls it before the whole message has arrived, because a bad length
 * means the byte stream can no longer be cut into messages.
 */
export function checkHeader(b: Buffer, pos: number, maxLength: number): number {
  if ((b.readInt32BE(pos) & b.readInt32BE(pos + 4) & b.readInt32BE(pos + 8) & b.readInt32BE(pos + 12)) !== -1) {
    throw new BgpError('marker is not all ones', ErrorCode.MESSAGE_HEADER, HeaderSubcode.CONNECTION_NOT_SYNCHRONIZED);
  }
  const length = b.readUInt16BE(pos + 16);
  if (length < HEADER_LENGTH) throw lengthError(length, `shorter than the ${HEADER_LENGTH}-octet header`);
  if (length > maxLength) throw lengthError(length, `longer than the ${maxLength}-octet limit of this session`);
  return length;
}

/**
 * Decodes one whole message (header included). Throws BgpError, and nothing else, when
 * the message is malformed; see BgpError.action for what the session should do.
 */
export function decodeMessage(bytes: Uint8Array, options: CodecOptions = {}): BgpMessage {
  const m = decodeReceivedMessage(bytes, options);
  return m.type === 'update' ? m.message : m;
}

/** A decoded message, an UPDATE as received (its message object made when asked for). */
export type ReceivedMessage = Exclude<BgpMessage, UpdateMessage> | ReceivedUpdate;

/** As decodeMessage, with an UPDATE handed back as received: a speaker reads its octets, not its objects. */
export function decodeReceivedMessage(bytes: Uint8Array, options: CodecOptions = {}): ReceivedMessage {
  const b = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (b.length < HEADER_LENGTH) throw lengthError(b.length, `shorter than the ${HEADER_LENGTH}-octet header`);
  const length = checkHeader(b, 0, maxMessageLength(options));
  if (length !== b.length) throw lengthError(length, `the header says ${length} but ${b.length} octets were given`);
  const type = b[18];
  const min = MIN_LENGTH[type];
  if (min === undefined) {
    throw new BgpError(`unknown message type ${type}`, ErrorCode.MESSAGE_HEADER, HeaderSubcode.BAD_MESSAGE_TYPE, Buffer.from([type]));
  }
  if (length < min || (type === MessageType.KEEPALIVE && length !== min)) {
    throw lengthError(length, `wrong for message type ${type}`);
  }
  switch (type) {
    case MessageType.OPEN:
      return decodeOpen(b, HEADER_LENGTH, length);
    case MessageType.UPDATE:
      return decodeReceivedUpdate(b, HEADER_LENGTH, length, options);
    case MessageType.NOTIFICATION:
      return decodeNotification(b, HEADER_LENGTH, length);
    case MessageType.KEEPALIVE:
      return { type: 'keepalive' };
    default: {
      if (length !== min) {
        // RFC 7313 §5 gives BoRR/EoRR their own error; a plain request is a header error.
        const subtype = b[HEADER_LENGTH + 2];
        if (subtype === 1 || subtype === 2) {
          throw new BgpError(
            `ROUTE-REFRESH length ${length}`,
            ErrorCode.ROUTE_REFRESH_MESSAGE,
            ROUTE_REFRESH_INVALID_LENGTH,
            Buffer.from(b),
          );
        }
        throw lengthError(length, 'a ROUTE-REFRESH is 23 octets');
      }
      return decodeRouteRefresh(b, HEADER_LENGTH);
    }
  }
}

const writer = new Writer();

const TYPE_CODES = {
  open: MessageType.OPEN,
  update: MessageType.UPDATE,
  notification: MessageType.NOTIFICATION,
  keepalive: MessageType.KEEPALIVE,
  'route-refresh': MessageType.ROUTE_REFRESH,
} as const;

/**
 * UPDATEs are written straight into a slab and handed out as views of it, with no copy: a
 * slab is like Buffer.allocUnsafe's pool, only larger. A fresh one is taken when less than
 * a standard message's room is left; one that overflows mid-message (an extended message)
 * grows by a copy, so the views already handed out stay as they were.
 */
const SLAB = 64 * 1024;

/**
 * Encodes one message, header included. Throws RangeError when it does not fit the session's
 * limit. An UPDATE's Buffer may share its memory with other encoded messages, as small
 * Buffers from Buffer.allocUnsafe do: copy it (Buffer.from) to keep it for long.
 */
export function encodeMessage(m: BgpMessage, options: CodecOptions = {}): Buffer {
  if (m.type === 'update') return encodeUpdate(m, options);
  let b: Buffer;
  switch (m.type) {
    case 'open':
      b = encodeOpen(m);
      break;
    case 'notification':
      b = encodeNotification(m);
      break;
    case 'keepalive':
      b = Buffer.alloc(HEADER_LENGTH);
      break;
    case 'route-refresh':
      b = encodeRouteRefresh(m);
      break;
  }
  const max = maxMessageLength(options);
  if (b.length > max) throw new RangeError(`${m.type} message is ${b.length} octets, more than the ${max}-octet limit`);
  // The marker by a loop: Buffer#fill's checks cost ~100 ns, more than the rest of a small UPDATE's header.
  for (let i = 0; i < 16; i++) b[i] = 0xff;
  b.writeUInt16BE(b.length, 16);
  b[18] = TYPE_CODES[m.type];
  return b;
}

/** An UPDATE, the message sent most: written in place, header included, and handed out as a view. */
function encodeUpdate(m: UpdateMessage, options: CodecOptions): Buffer {
  if (writer.buf.length - writer.pos < MAX_MESSAGE_LENGTH) {
    writer.buf = Buffer.allocUnsafe(SLAB);
    writer.pos = 0;
  }
  const start = writer.pos;
  writer.pos = start + HEADER_LENGTH;
  writeUpdate(writer, m, options);
  const length = writer.pos - start;
  const max = options.extendedMessage ? MAX_EXTENDED_MESSAGE_LENGTH : MAX_MESSAGE_LENGTH;
  if (length > max) {
    writer.pos = start;
    throw new RangeError(`update message is ${length} octets, more than the ${max}-octet limit`);
  }
  const b = writer.buf;
  for (let i = start; i < start + 16; i++) b[i] = 0xff;
  b[start + 16] = length >> 8;
  b[start + 17] = length & 0xff;
  b[start + 18] = MessageType.UPDATE;
  return b.subarray(start, writer.pos);
}
