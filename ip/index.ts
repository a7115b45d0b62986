// ip/: addresses and CIDR prefixes, shared by bgp/, felix/ and lib/. Imports nothing of ours.
export { AddressError } from './error.js';
export {
  familyBits,
  parseAddress,
  parseIpv4Into,
  ipv4NumberAt,
  parseIpv4Number,
  formatIpv4Number,
  parseIpv6Into,
  formatAddress,
  formatIpv4,
  formatIpv6,
  addressValue,
  addressFromValue,
  type IpFamily,
  type Address,
} from './address.js';
export {
  parseCidr,
  parseInterfaceAddress,
  cidrAddress,
  formatCidr,
  canonicalCidr,
  hostPrefix,
  cidrNetwork,
  cidrContains,
  cidrsOverlap,
  cidrSize,
  subBlockCount,
  subBlock,
  addressAt,
  type Cidr,
} from './cidr.js';
export { parseRouterId, checkedRouterId } from './router-id.js';
