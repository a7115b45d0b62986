// The RFC 4456 rules, as the RIB's reflection hook: which iBGP routes may go to which iBGP
// peers, and what a reflected route carries. The loop checks on the way in (our router ID as
// ORIGINATOR_ID, our cluster ID in CLUSTER_LIST) and the tie-breaks on ORIGINATOR_ID and
// CLUSTER_LIST length are the RIB's own, switched on by `clusterId`.
import type { IbgpReflectionHook, PathAttributes, RibPeer, UpdateGroupInfo } from '../bgp/index.js';
import { checkedRouterId } from '../ip/index.js';

/**
 * RFC 4456 §6: a route from a client goes to every client and non-client; a route from a
 * non-client goes to clients only. (A route from an eBGP peer or our own is not reflected:
 * the ordinary iBGP rules send it to everyone, without ORIGINATOR_ID or CLUSTER_LIST.)
 */
export function mayReflect(from: RibPeer, to: UpdateGroupInfo): boolean {
  return from.config.routeReflectorClient === true || to.routeReflectorClient;
}

/**
 * RFC 4456 §8: ORIGINATOR_ID names the router that brought the route into the AS (the peer we
 * learned it from, unless it is already set); our cluster ID goes in front of CLUSTER_LIST.
 * Next hop and every other attribute are left as they came.
 */
export function reflectAttributes(attributes: PathAttributes, from: RibPeer, clusterId: string): void {
  if (attributes.originatorId === undefined) attributes.originatorId = from.routerId;
  attributes.clusterList = [clusterId, ...(attributes.clusterList ?? [])];
}

/** The hook that makes a RIB a route reflector for cluster `clusterId`. */
export function reflectionHook(clusterId: string): IbgpReflectionHook {
  checkClusterId(clusterId);
  return {
    mayReflect,
    reflect: (attributes, from) => reflectAttributes(attributes, from, clusterId),
  };
}

/**
 * What to spread into `SpeakerOptions.rib` (or `RibOptions`) to make a speaker a reflector:
 * the cluster ID for the loop check and the hook. Peers then become clients through
 * `routeReflectorClient: true`; every other iBGP peer is a non-client.
 */
export function routeReflectorRibOptions(clusterId: string): { clusterId: string; reflection: IbgpReflectionHook } {
  return { clusterId, reflection: reflectionHook(clusterId) };
}

/** A cluster ID is written as a router ID is, and often is one: the same rule and message. */
export function checkClusterId(clusterId: unknown, field = 'clusterId'): string {
  return checkedRouterId(clusterId, field);
}
