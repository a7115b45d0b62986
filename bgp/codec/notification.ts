// NOTIFICATION (RFC 4271 §4.5), with the shutdown communication of RFC 8203/9003 for
// Cease / Administrative Shutdown and Administrative Reset.
import { CeaseSubcode, ErrorCode, HEADER_LENGTH } from './constants.js';
import type { NotificationMessage } from './types.js';

const MAX_COMMUNICATION = 255;

function carriesCommunication(code: number, subcode: number): boolean {
  return code === ErrorCode.CEASE && (subcode === CeaseSubcode.ADMINISTRATIVE_SHUTDOWN || subcode === CeaseSubcode.ADMINISTRATIVE_RESET);
}

export function decodeNotification(b: Buffer, pos: number, end: number): NotificationMessage {
  const code = b[pos];
  const subcode = b[pos + 1];
  const data = Buffer.from(b.subarray(pos + 2, end));
  const m: NotificationMessage = { type: 'notification', code, subcode, data };
  if (carriesCommunication(code, subcode) && data.length >= 1 && data[0] === data.length - 1) {
    const text = data.toString('utf8', 1);
    // Only when it reads back to the same octets: invalid UTF-8 stays in `data` alone.
    if (Buffer.byteLength(text) === data.length - 1) m.shutdownCommunication = text;
  }
  return m;
}

export function shutdownCommunicationData(text: string): Buffer {
  let bytes = Buffer.from(text, 'utf8');
  if (bytes.length > MAX_COMMUNICATION) {
    // Cut on a character boundary: a truncated UTF-8 sequence would make the peer drop it.
    let n = MAX_COMMUNICATION;
    while (n > 0 && (bytes[n] & 0xc0) === 0x80) n--;
    bytes = bytes.subarray(0, n);
  }
  return Buffer.concat([Buffer.from([bytes.length]), bytes]);
}

export function encodeNotification(m: NotificationMessage): Buffer {
  const data = m.shutdownCommunication !== undefined ? shutdownCommunicationData(m.shutdownCommunication) : m.data;
  const b = Buffer.alloc(HEADER_LENGTH + 2 + data.length);
  b[HEADER_LENGTH] = m.code;
  b[HEADER_LENGTH + 1] = m.subcode;
  data.copy(b, HEADER_LENGTH + 2);
  return b;
}
