// reflector/: RFC 4456 route reflection on top of the BGP speaker (imports bgp/ only).
export { mayReflect, reflectAttributes, reflectionHook, routeReflectorRibOptions, checkClusterId } from './rules.js';
export {
  RouteReflector,
  reflectorSpeakerOptions,
  reflectorStatus,
  type RouteReflectorOptions,
  type ReflectorRole,
  type ReflectorPeerStatus,
  type ReflectorStatus,
} from './reflector.js';
