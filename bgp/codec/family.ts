// The address families podroute speaks and their AFI/SAFI numbers (RFC 4760 §5): the one
// mapping between the two, for the codec's MP attributes, the OPEN's capabilities, ROUTE-REFRESH
// and the RIB.
import { Afi, Safi } from './constants.js';
import type { AddressFamily } from './types.js';

/** The family of an AFI/SAFI pair; undefined for one podroute does not carry. */
export function familyOf(afi: number, safi: number): AddressFamily | undefined {
  if (safi !== Safi.UNICAST) return undefined;
  return afi === Afi.IPV4 ? 'ipv4-unicast' : afi === Afi.IPV6 ? 'ipv6-unicast' : undefined;
}

/** The AFI of a family; its SAFI is Safi.UNICAST. */
export function afiOf(family: AddressFamily): number {
  return family === 'ipv6-unicast' ? Afi.IPV6 : Afi.IPV4;
}
