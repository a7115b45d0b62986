// Communities as route collectors' tools print them: "65000:100" (RFC 1997, the high and low
// 16 bits, well-known ones too, as bgpdump does) and "65000:1:2" (RFC 8092 large communities).
// The RIB's text forms, which every output of podroute shares.
export { formatCommunity, formatLargeCommunity } from '../rib/communities.js';
