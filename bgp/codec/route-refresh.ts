// ROUTE-REFRESH (RFC 2918), with the BoRR/EoRR subtypes of enhanced route refresh (RFC 7313).
import { HEADER_LENGTH } from './constants.js';
import type { RouteRefreshMessage } from './types.js';

export function decodeRouteRefresh(b: Buffer, pos: number): RouteRefreshMessage {
  return { type: 'route-refresh', afi: b.readUInt16BE(pos), subtype: b[pos + 2], safi: b[pos + 3] };
}

export function encodeRouteRefresh(m: RouteRefreshMessage): Buffer {
  const b = Buffer.alloc(HEADER_LENGTH + 4);
  b.writeUInt16BE(m.afi, HEADER_LENGTH);
  b[HEADER_LENGTH + 2] = m.subtype;
  b[HEADER_LENGTH + 3] = m.safi;
  return b;
}
