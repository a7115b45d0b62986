// Calico's projectcalico.org/v3 BGPFilter: per family, ordered import and export rules that a
// BGPPeer names in `filters`. The first rule that matches a route decides; see lib/agent/bgp-filters.ts.

export type BGPFilterAction = 'Accept' | 'Reject';
export type BGPFilterMatchOperator = 'Equal' | 'NotEqual' | 'In' | 'NotIn';

export interface BGPFilterRule {
  /** With matchOperator: the prefix the route's is compared with (the rule's family). */
  cidr?: string;
  matchOperator?: BGPFilterMatchOperator;
  /** With In and NotIn: the prefix lengths that count as inside the CIDR (default: the CIDR's own up to the family's longest). */
  prefixLength?: { min?: number; max?: number };
  /** RemotePeers: the rule holds only for routes learned from a BGP peer (on export, not the ones this node originates). */
  source?: 'RemotePeers';
  action: BGPFilterAction;
}

export interface BGPFilterSpec {
  exportV4?: BGPFilterRule[];
  importV4?: BGPFilterRule[];
  exportV6?: BGPFilterRule[];
  importV6?: BGPFilterRule[];
}
