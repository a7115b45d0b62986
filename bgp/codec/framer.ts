// Cuts a TCP byte stream into whole BGP messages: partial reads, many messages in one
// chunk, and the 4096 / 65535 length limits (the latter once extended messages are agreed).
import { HEADER_LENGTH, MAX_MESSAGE_LENGTH } from './constants.js';
import { checkHeader } from './message.js';

export class MessageFramer {
  /** Raise to 65535 once both sides have sent the extended message capability. */
  maxLength: number;
  private pending: Buffer = Buffer.alloc(0);

  constructor(options: { maxLength?: number } = {}) {
    this.maxLength = options.maxLength ?? MAX_MESSAGE_LENGTH;
  }

  /**
   * Adds a chunk and returns the messages it completes, each a Buffer of exactly one
   * message. Throws BgpError (Message Header Error) when a header is bad: the stream
   * cannot be resynchronised after that, so the session must close.
   */
  push(chunk: Buffer): Buffer[] {
    const b = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: Buffer[] = [];
    let pos = 0;
    while (b.length - pos >= HEADER_LENGTH) {
      const length = checkHeader(b, pos, this.maxLength);
      if (b.length - pos < length) break;
      out.push(b.subarray(pos, pos + length));
      pos += length;
    }
    // Copy the tail so a small remainder does not pin a large chunk in memory.
    this.pending = pos === b.length ? Buffer.alloc(0) : Buffer.from(b.subarray(pos));
    return out;
  }

  /** Octets received that do not yet make a whole message. */
  get buffered(): number {
    return this.pending.length;
  }
}
