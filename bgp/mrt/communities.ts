// Communities as route collectors' tools print them: "65000:100" (RFC 1997, the high and low
// 16 bits, well-known ones too, as bgpdump does) and "65000:1:2" (RFC 8092 large communities).
import type { LargeCommunity } from '../codec/types.js';

export function formatCommunity(c: number): string {
  return `${c >>> 16}:${c & 0xffff}`;
}

export function formatLargeCommunity([global, local1, local2]: LargeCommunity): string {
  return `${global}:${local1}:${local2}`;
}
