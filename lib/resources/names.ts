// How Calico names the datastore objects that stand for a CIDR (an IPAM block is named after
// its CIDR), so blocks written by podroute and by Calico's IPAM have the same names.

/** Every '.', ':' and '/' of the CIDR's text turned into '-': 10.65.0.0/26 is 10-65-0-0-26. */
export function cidrName(cidrText: string): string {
  return cidrText.replace(/[./:]/g, '-');
}
