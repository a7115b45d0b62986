// RFC 4456 reflection rules as the RIB's hook, for agents that are route reflectors
// (a Node with spec.bgp.routeReflectorClusterID). Used until reflector/ (issue 4) exports its own.
import type { IbgpReflectionHook, RibPeer, UpdateGroupInfo } from '../../bgp/index.js';
import type { PathAttributes } from '../../bgp/codec/index.js';

export function reflectionHook(clusterId: string): IbgpReflectionHook {
  return {
    // §6: a route from a client goes to clients and non-clients; from a non-client, to clients only.
    mayReflect(from: RibPeer, to: UpdateGroupInfo): boolean {
      return from.config.routeReflectorClient === true || to.routeReflectorClient;
    },
    reflect(attributes: PathAttributes, from: RibPeer): void {
      // §8: ORIGINATOR_ID is set once, by the first reflector; each reflector prepends its cluster ID.
      if (attributes.originatorId === undefined) attributes.originatorId = from.routerId;
      attributes.clusterList = [clusterId, ...(attributes.clusterList ?? [])];
    },
  };
}
