// NLRI fields: a run of (path id?, length, significant octets) entries (RFC 4271 §4.3,
// RFC 4760, RFC 7911).
import { formatIpv6 } from './address.js';
import type { Nlri } from './types.js';

/** Why a run of prefixes could not be read; the caller turns it into the right BgpError. */
export class NlriSyntaxError extends Error {}

const v6 = Buffer.alloc(16);

/**
 * Reads prefixes from b[pos, end) into out. A prefix that overruns the field or is longer
 * than the family allows throws NlriSyntaxError.
 */
export function readNlri(b: Buffer, pos: number, end: number, ipv6: boolean, addPath: boolean, out: Nlri[]): void {
  const max = ipv6 ? 128 : 32;
  while (pos < end) {
    let pathId: number | undefined;
    if (addPath) {
      if (pos + 5 > end) throw pathIdOverrun();
      pathId = b.readUInt32BE(pos);
      pos += 4;
    }
    const length = b[pos++];
    if (length > max) throw tooLong(length, max);
    const n = (length + 7) >> 3;
    if (pos + n > end) throw overrun(length);
    let prefix: string;
    if (!ipv6) {
      const a = n > 0 ? b[pos] : 0;
      const c = n > 1 ? b[pos + 1] : 0;
      const d = n > 2 ? b[pos + 2] : 0;
      const e = n > 3 ? b[pos + 3] : 0;
      prefix = a + '.' + c + '.' + d + '.' + e + '/' + length;
    } else {
      v6.fill(0);
      b.copy(v6, 0, pos, pos + n);
      prefix = formatIpv6(v6, 0) + '/' + length;
    }
    pos += n;
    out.push({ prefix, pathId });
  }
}

/** Checks a run of prefixes as readNlri does, without making them; returns how many there are. */
export function countNlri(b: Buffer, pos: number, end: number, ipv6: boolean, addPath: boolean): number {
  const max = ipv6 ? 128 : 32;
  let count = 0;
  while (pos < end) {
    if (addPath) {
      if (pos + 5 > end) throw pathIdOverrun();
      pos += 4;
    }
    const length = b[pos++];
    if (length > max) throw tooLong(length, max);
    pos += (length + 7) >> 3;
    if (pos > end) throw overrun(length);
    count++;
  }
  return count;
}

function pathIdOverrun(): NlriSyntaxError {
  return new NlriSyntaxError('path identifier overruns the NLRI field');
}

function tooLong(length: number, max: number): NlriSyntaxError {
  return new NlriSyntaxError(`prefix length ${length} is more than ${max}`);
}

function overrun(length: number): NlriSyntaxError {
  return new NlriSyntaxError(`prefix of length ${length} overruns the NLRI field`);
}
