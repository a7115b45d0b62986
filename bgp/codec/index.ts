// The BGP-4 wire codec: pure functions from bytes to typed messages and back.
export * from './types.js';
export * from './constants.js';
export { BgpError, type ErrorAction } from './errors.js';
export { decodeMessage, decodeReceivedMessage, encodeMessage, maxMessageLength, type ReceivedMessage } from './message.js';
export { MessageFramer } from './framer.js';
export {
  attributesUnread,
  endOfRib,
  endOfRibFamily,
  receivedAttributes,
  receivedNlri,
  type ReceivedNlri,
  receivedUpdate,
  type ReceivedUpdate,
  unreadMpAttributes,
  updateMessageOf,
  withoutIpv4Prefixes,
} from './update.js';
export { decodePathAttributes } from './attributes-decode.js';
export { afiOf, familyOf } from './family.js';
export { canonicalFlags, ruleByType } from './attribute-rules.js';
export { shutdownCommunicationData } from './notification.js';
export { formatIpv4, formatIpv6, parsePrefix } from './address.js';
export { negotiatedOptions, openAs, findCapability, commonFamilies, type NegotiatedOptions } from './negotiate.js';
