// The BGP identifier (RFC 6286: a router ID, a non-zero 32-bit value) and the cluster ID that
// RFC 4456 writes the same way: one rule and one message for every layer that takes one.
import { addressValue, parseIpv4Into } from './address.js';
import { AddressError } from './error.js';

/**
 * The identifier as an unsigned 32-bit number (what the OPEN and the decision process compare).
 * Refused, with AddressError naming `field`: anything but four octets as a dotted quad (read as
 * every address in ip/ is, so no leading zeros), and 0.0.0.0. `otherwise` names what else the
 * caller takes in its place (the agent's `hash`), so that the message says so.
 */
export function parseRouterId(text: unknown, field = 'routerId', otherwise?: string): number {
  const n = typeof text === 'string' ? value(text) : 0;
  if (n === 0) throw refused(text, field, otherwise);
  return n;
}

/** The identifier as it was written, refused as `parseRouterId` refuses it. */
export function checkedRouterId(text: unknown, field = 'routerId', otherwise?: string): string {
  if (typeof text === 'string' && value(text) !== 0) return text;
  throw refused(text, field, otherwise);
}

/** The dotted quad's value; 0 for text that is not one, as for 0.0.0.0 (neither is an identifier). */
function value(text: string): number {
  const bytes = new Uint8Array(4);
  return parseIpv4Into(text, bytes) ? Number(addressValue(bytes)) : 0;
}

function refused(text: unknown, field: string, otherwise: string | undefined): AddressError {
  const or = otherwise === undefined ? '' : `, or ${otherwise}`;
  return new AddressError(field, text, `is not a dotted-quad identifier (four octets, not 0.0.0.0, such as 10.0.0.1${or})`);
}
