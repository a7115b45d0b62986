// The names the policy compiler gives the kernel: sets, maps and chains derived from the ids of the
// input (so a name survives restarts and re-orderings, and a person can find the policy behind
// a chain), and the ids kept in rule comments, by which counters are read back.
import * as crypto from 'node:crypto';

/** Kept well under the kernel's limit, so `nft list` stays readable; longer names end in a hash. */
export const MAX_NAME = 63;
/** A rule's comment holds 128 bytes, NUL included. */
export const MAX_RULE_ID = 127;

// What nft's scanner reads as a name after a letter-led prefix (it also takes '/', which reads
// like a prefix length, so it is left out).
const NAME_CHARS = /^[A-Za-z0-9_.-]+$/;

// The one-shot digest (Node 20.12 on) makes no Hash object per name: a whole load names tens of
// thousands of chains.
const oneShot: typeof crypto.hash | undefined = crypto.hash;

function shortHash(text: string): string {
  const hex = oneShot ? oneShot('sha256', text, 'hex') : crypto.createHash('sha256').update(text).digest('hex');
  return hex.slice(0, 12);
}

/**
 * `prefix` + `id` when that is short and readable by nft as it is; else as much of the id as
 * fits, its other characters as `_`, and a hash of the whole id, so distinct ids stay distinct.
 */
export function nftName(prefix: string, id: string): string {
  if (id.length > 0 && prefix.length + id.length <= MAX_NAME && NAME_CHARS.test(id)) return prefix + id;
  const hash = shortHash(id);
  const keep = id.replace(/[^A-Za-z0-9_.-]+/g, '_').slice(0, MAX_NAME - prefix.length - hash.length - 1);
  return `${prefix}${keep}-${hash}`;
}

export type Direction = 'ingress' | 'egress';
type Family = 4 | 6;

const DIR: Readonly<Record<Direction, string>> = { ingress: 'in', egress: 'out' };

/** The kernel set holding one family of an AddressSet's members. */
export const addressSetName = (id: string, family: Family): string => nftName(`s${family}-`, id);
/** The concatenated (address . protocol . port) set of a NamedPortSet, one family. */
export const namedPortSetName = (id: string, family: Family): string => nftName(`np${family}-`, id);
/** Every pool of the cluster, one family: the "outside every pool" of natOutgoing. */
export const poolsSetName = (family: Family): string => `pools-v${family}`;
/** The pools with natOutgoing, one family. */
export const natPoolsSetName = (family: Family): string => `nat-pools-v${family}`;

/**
 * Base chains. The forward hook has two: `forward` runs the source endpoint's egress policy,
 * then `forward-to-wl` (one priority later) the destination endpoint's ingress policy. An
 * egress Allow is an `accept` that ends the first; the packet goes on to the second.
 */
export const FORWARD_CHAIN = 'forward';
export const FORWARD_TO_ENDPOINT_CHAIN = 'forward-to-wl';
export const POSTROUTING_CHAIN = 'postrouting';

/**
 * The verdict maps that dispatch a packet by interface to its endpoint's chain: `from-wl`
 * (iifname → `jump from-<iface>`) and `to-wl` (oifname → `jump to-<iface>`). A pod on this
 * node is one element in each; the rules that consult them never change.
 */
export const FROM_ENDPOINT_MAP = 'from-wl';
export const TO_ENDPOINT_MAP = 'to-wl';

/** An endpoint's policy for one direction: `to-<iface>` (its ingress), `from-<iface>` (its egress). */
export const endpointChainName = (iface: string, direction: Direction): string => nftName(direction === 'ingress' ? 'to-' : 'from-', iface);

/** One policy's rules for one direction, shared by every endpoint it selects (Calico's pi/po). */
export const policyChainName = (policyId: string, direction: Direction): string =>
  nftName(direction === 'ingress' ? 'pi-' : 'po-', policyId);

// A comment is a quoted string without escapes: an id that cannot be written as it is, or is
// too long, is shortened as names are.
const COMMENT_CHARS = /^[\x20-\x7e]+$/;
const commentSafe = (text: string): boolean => COMMENT_CHARS.test(text) && !/["\\]/.test(text);

function idPart(text: string, room: number): string {
  if (text.length <= room && commentSafe(text)) return text;
  const hash = shortHash(text);
  const keep = text.replace(/[^\x20-\x7e]|["\\]/g, '_').slice(0, Math.max(0, room - hash.length - 1));
  return `${keep}#${hash}`;
}

/**
 * `<policy id>/<in|out>/<rule index>`: the comment of every nft rule one policy rule became
 * (a rule for both families is two nft rules with one id; their counters add up).
 */
export function ruleId(policyId: string, direction: Direction, index: number): string {
  const tail = `/${DIR[direction]}/${index}`;
  return idPart(policyId, MAX_RULE_ID - tail.length) + tail;
}

/**
 * `<iface>/<in|out>/tier/<name>` (an unnamed tier: `…/tier<N>`, its index): the end of one of an
 * endpoint's tiers, where none of its policies decided and the tier's default action applies.
 */
export function tierEndId(iface: string, direction: Direction, tier: string | number): string {
  const tail = typeof tier === 'number' ? `/${DIR[direction]}/tier${tier}` : `/${DIR[direction]}/tier/${idPart(tier, 48)}`;
  return idPart(iface, MAX_RULE_ID - tail.length) + tail;
}

/** `<iface>/out/rpf`: packets from an endpoint whose source address does not route back to it. */
export const rpfId = (iface: string): string => `${idPart(iface, MAX_RULE_ID - 8)}/out/rpf`;

/** `natOutgoing/v4`, `natOutgoing/v6`: the masquerade rules. */
export const natOutgoingId = (family: Family): string => `natOutgoing/v${family}`;
