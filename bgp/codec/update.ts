// UPDATE (RFC 4271 §4.3) with the error handling of RFC 7606, and End-of-RIB (RFC 4724 §2).
import { NEEDS_DECODE, checkAttributes, decodeAttributes, type Problem } from './attributes-decode.js';
import { writeAttributes } from './attributes-encode.js';
import { AttrType as T, ErrorCode, Safi, UpdateSubcode as S } from './constants.js';
import { BgpError, moreSevere } from './errors.js';
import { afiOf, familyOf } from './family.js';
import { writeNlriInto } from './nlri-encode.js';
import { NlriSyntaxError, countNlri, readNlri } from './nlri.js';
import type { AddressFamily, CodecOptions, Nlri, PathAttributes, UpdateMessage } from './types.js';
import type { Writer } from './writer.js';

function updateError(subcode: number, message: string, data?: Buffer): BgpError {
  return new BgpError(`UPDATE: ${message}`, ErrorCode.UPDATE_MESSAGE, subcode, data);
}

function readField(b: Buffer, pos: number, end: number, addPath: boolean, what: string): Nlri[] {
  const out: Nlri[] = [];
  try {
    readNlri(b, pos, end, false, addPath, out);
  } catch (e) {
    if (e instanceof NlriSyntaxError) throw updateError(S.INVALID_NETWORK_FIELD, `${what}: ${e.message}`);
    throw e;
  }
  return out;
}

function countField(b: Buffer, pos: number, end: number, addPath: boolean, what: string): number {
  try {
    return countNlri(b, pos, end, false, addPath);
  } catch (e) {
    if (e instanceof NlriSyntaxError) throw updateError(S.INVALID_NETWORK_FIELD, `${what}: ${e.message}`);
    throw e;
  }
}

/**
 * Decodes the body of an UPDATE (the octets after the header), checks and errors included, and
 * hands it back as received: its message object is made when first asked for.
 */
export function decodeReceivedUpdate(b: Buffer, pos: number, end: number, options: CodecOptions): ReceivedUpdate {
  if (end - pos < 4) throw updateError(S.MALFORMED_ATTRIBUTE_LIST, 'shorter than its two length fields');
  const withdrawnEnd = pos + 2 + b.readUInt16BE(pos);
  if (withdrawnEnd + 2 > end) throw updateError(S.MALFORMED_ATTRIBUTE_LIST, 'withdrawn routes length overruns the message');
  const attrStart = withdrawnEnd + 2;
  const attrEnd = attrStart + b.readUInt16BE(withdrawnEnd);
  if (attrEnd > end) throw updateError(S.MALFORMED_ATTRIBUTE_LIST, 'total path attribute length overruns the message');

  const addPath = options.addPath?.['ipv4-unicast'] === true;
  const withdrawnCount = countField(b, pos + 2, withdrawnEnd, addPath, 'withdrawn routes');
  const problems: Problem[] = [];
  const fourOctetAs = options.fourOctetAs !== false;
  if (fourOctetAs && (withdrawnCount > 0 || attrEnd < end || attrEnd > attrStart)) {
    // Checked now, made into objects when first read: a speaker keys attribute sets by these
    // octets and reads them as objects only for a set it has not seen, if at all.
    const seen = checkAttributes(b, attrStart, attrEnd, options, problems);
    const nlriCount = countField(b, attrEnd, end, addPath, 'NLRI');
    if (
      seen !== NEEDS_DECODE &&
      problems.length === 0 &&
      (nlriCount === 0 || (seen & MANDATORY) === MANDATORY) &&
      ((seen & (1 << T.MP_REACH_NLRI)) === 0 || (seen & MANDATORY_MP) === MANDATORY_MP)
    ) {
      const received = new Received(b, pos + 2, withdrawnEnd, attrEnd, end, true, addPath, withdrawnCount, nlriCount);
      received.mpChecked = (seen & MP_TYPES) !== 0;
      return received;
    }
    // An MP attribute left to the decode, a missing attribute or a problem: decoded as below,
    // which reports them.
    problems.length = 0;
  }
  const attributes = decodeAttributes(b, attrStart, attrEnd, options, problems);
  const nlriCount = countField(b, attrEnd, end, addPath, 'NLRI');
  const mp = attributes.mpReach;
  if (nlriCount > 0 || (mp && (mp.nlri?.length || mp.raw))) {
    // RFC 7606 §3 (d): an announcement without a mandatory attribute is withdrawn instead.
    if (attributes.origin === undefined) problems.push(missing(T.ORIGIN));
    if (attributes.asPath === undefined) problems.push(missing(T.AS_PATH));
    if (attributes.nextHop === undefined && nlriCount > 0) problems.push(missing(T.NEXT_HOP));
  }
  if (problems.length > 0) {
    const withdrawn = readField(b, pos + 2, withdrawnEnd, addPath, 'withdrawn routes');
    throw worstOf(problems, { type: 'update', withdrawn, attributes, nlri: readField(b, attrEnd, end, addPath, 'NLRI') });
  }
  const received = new Received(b, pos + 2, withdrawnEnd, attrEnd, end, fourOctetAs, addPath, withdrawnCount, nlriCount);
  received.attributesList = attributes;
  return received;
}

/**
 * An UPDATE as it came off the wire. A reader that needs only its octets (receivedNlri,
 * receivedAttributes and the like take it as they take a message) never has its message made:
 * making it was 4–6 % of a speaker's cold replay of real updates, about a tenth of a warm one.
 */
export interface ReceivedUpdate {
  readonly type: 'update';
  /** The decoded message, made on the first read and the same object after. */
  readonly message: UpdateMessage;
}

/** A message built in code or decoded before, as a ReceivedUpdate: its octets are the message's own, if any. */
export function receivedUpdate(message: UpdateMessage): ReceivedUpdate {
  return receivedOf(message) ?? { type: 'update', message };
}

/**
 * The message of a cleanly decoded UPDATE. Its prefix lists, and its attributes when not made
 * already, are made when first read (a speaker keys the prefixes and the attribute set from
 * the octets and never reads them), through shared accessors, in key order. What came off the
 * wire is kept beside the message, not enumerable: it stays the plain object it always was,
 * and compares so.
 */
function messageOf(r: Received): UpdateMessage {
  const attributes = r.attributesList;
  if (r.withdrawnCount === 0 && r.nlriCount === 0 && attributes !== undefined) {
    const update: UpdateMessage = { type: 'update', withdrawn: [], attributes, nlri: [] };
    new Stamp(update, r);
    return update;
  }
  const update = { type: 'update' } as UpdateMessage;
  if (r.withdrawnCount > 0) Object.defineProperty(update, 'withdrawn', WITHDRAWN_ON_DEMAND);
  else update.withdrawn = [];
  if (attributes === undefined) Object.defineProperty(update, 'attributes', ATTRIBUTES_ON_DEMAND);
  else update.attributes = attributes;
  if (r.nlriCount > 0) Object.defineProperty(update, 'nlri', NLRI_ON_DEMAND);
  else update.nlri = [];
  new Stamp(update, r);
  return update;
}

/** A received UPDATE's octets: where its fields lie, and whether its prefix lists were ever made. */
class Received implements ReceivedNlri, ReceivedUpdate {
  readonly type = 'update';
  unread = true;
  /** A list was set in code: the octets no longer say what the message holds. */
  replaced = false;
  /** The prefix lists once made (or set). */
  withdrawnList: Nlri[] | undefined = undefined;
  nlriList: Nlri[] | undefined = undefined;
  /** The attributes once made (or set); until then they were only checked. */
  attributesList: PathAttributes | undefined = undefined;
  /** The attributes were set in code: the octets no longer say what they are. */
  attributesReplaced = false;
  /** The check met MP_REACH_NLRI or MP_UNREACH_NLRI among the attributes it left unmade. */
  mpChecked = false;
  /** The message, once asked for. */
  private made: UpdateMessage | undefined = undefined;
  constructor(
    private readonly b: Buffer,
    private readonly withdrawnStart: number,
    private readonly withdrawnEnd: number,
    private readonly attrEnd: number,
    private readonly end: number,
    /** Whether the attributes read back alone as decoded (4-octet AS numbers). */
    private readonly fourOctetAs: boolean,
    readonly addPath: boolean,
    readonly withdrawnCount: number,
    readonly nlriCount: number,
  ) {}

  get message(): UpdateMessage {
    this.made ??= messageOf(this);
    return this.made;
  }

  get withdrawn(): Buffer {
    return this.b.subarray(this.withdrawnStart, this.withdrawnEnd);
  }

  get nlri(): Buffer {
    return this.b.subarray(this.attrEnd, this.end);
  }

  get attributes(): Buffer | undefined {
    const start = this.withdrawnEnd + 2;
    // None at all (a withdrawal) is empty octets: a reader needs no message to learn that.
    return this.fourOctetAs && !this.attributesReplaced ? this.b.subarray(start, this.attrEnd) : undefined;
  }

  get attributesUnread(): boolean {
    return this.attributesList === undefined;
  }

  /**
   * endOfRibFamily for attributes not read yet, from their octets: the family when they are
   * one MP_UNREACH_NLRI of a known family with no prefix (RFC 4724 §2), else undefined.
   */
  endOfRibFamily(): AddressFamily | undefined {
    const b = this.b;
    const p = this.withdrawnEnd + 2;
    if (this.attrEnd - p < 6 || b[p + 1] !== T.MP_UNREACH_NLRI) return undefined;
    const extended = (b[p] & 0x10) !== 0;
    const header = extended ? 4 : 3;
    const length = extended ? b.readUInt16BE(p + 2) : b[p + 2];
    // Its AFI and SAFI alone, and nothing after it.
    if (length !== 3 || p + header + 3 !== this.attrEnd) return undefined;
    return familyOf(b.readUInt16BE(p + header), b[p + header + 2]);
  }

  /** The attributes as objects, decoded from octets checked already. */
  decodeAttributes(): PathAttributes {
    const problems: Problem[] = [];
    const a = decodeAttributes(this.b, this.withdrawnEnd + 2, this.attrEnd, { fourOctetAs: true }, problems);
    if (problems.length > 0) throw new Error(`codec: path attributes that passed the check decode with a problem: ${problems[0].message}`);
    return a;
  }
}

/**
 * A prefix list as an enumerable property read on demand: made on the first read and kept,
 * and a write replaces it, so the message compares, spreads and serialises as a plain one.
 * The accessors are shared (they find the octets through `this`) and stay in place: turning
 * the property into a plain one on first read cost more than decoding the prefixes.
 */
function onDemand(name: 'withdrawn' | 'nlri'): PropertyDescriptor {
  return {
    enumerable: true,
    configurable: true,
    get(this: UpdateMessage): Nlri[] {
      const r = receivedOf(this)!;
      let list = name === 'nlri' ? r.nlriList : r.withdrawnList;
      if (list === undefined) {
        const field = name === 'nlri' ? r.nlri : r.withdrawn;
        list = [];
        readNlri(field, 0, field.length, false, r.addPath, list);
        if (name === 'nlri') r.nlriList = list;
        else r.withdrawnList = list;
        r.unread = false;
      }
      return list;
    },
    set(this: UpdateMessage, list: Nlri[]): void {
      const r = receivedOf(this)!;
      if (name === 'nlri') r.nlriList = list;
      else r.withdrawnList = list;
      r.unread = false;
      r.replaced = true;
    },
  };
}

/** The attributes as an enumerable property read on demand, as the prefix lists (see there). */
const ATTRIBUTES_ON_DEMAND: PropertyDescriptor = {
  enumerable: true,
  configurable: true,
  get(this: UpdateMessage): PathAttributes {
    const r = receivedOf(this)!;
    r.attributesList ??= r.decodeAttributes();
    return r.attributesList;
  },
  set(this: UpdateMessage, a: PathAttributes): void {
    const r = receivedOf(this)!;
    r.attributesList = a;
    r.attributesReplaced = true;
  },
};

/** ORIGIN, AS_PATH and NEXT_HOP: an IPv4 announcement without one is withdrawn (RFC 7606 §3 (d)). */
const MANDATORY = (1 << T.ORIGIN) | (1 << T.AS_PATH) | (1 << T.NEXT_HOP);
/** ORIGIN and AS_PATH beside an MP_REACH_NLRI (its next hop is its own); without them the decode judges. */
const MANDATORY_MP = (1 << T.ORIGIN) | (1 << T.AS_PATH);
const MP_TYPES = (1 << T.MP_REACH_NLRI) | (1 << T.MP_UNREACH_NLRI);

/** What came off the wire for a message or a received UPDATE; undefined for one built in code or copied. */
function receivedOf(m: UpdateMessage | ReceivedUpdate): Received | undefined {
  if (m instanceof Received) return m;
  return Stamp.of(isReceived(m) ? m.message : m);
}

function isReceived(m: UpdateMessage | ReceivedUpdate): m is ReceivedUpdate {
  return 'message' in m;
}

/** The message of a received UPDATE, or the message itself. */
export function updateMessageOf(m: UpdateMessage | ReceivedUpdate): UpdateMessage {
  return isReceived(m) ? m.message : m;
}

/** A constructor that hands back the object it is given, so that a subclass adds fields to it. */
class Adopt {
  constructor(o: object) {
    // biome-ignore lint/correctness/noConstructorReturn: the point of the class: the subclass's `this` is o.
    return o;
  }
}

/**
 * Puts what came off the wire on a decoded message as a private field. Like the non-enumerable
 * symbol-keyed property it replaces, it stays out of comparisons, spreads and JSON; unlike it,
 * it is set by a store V8 compiles inline instead of an Object.defineProperty through the
 * runtime, which was about a sixth of decoding a small UPDATE.
 */
class Stamp extends Adopt {
  #received: Received;
  constructor(m: UpdateMessage, r: Received) {
    super(m);
    this.#received = r;
  }
  static of(m: object): Received | undefined {
    return #received in m ? (m as Stamp).#received : undefined;
  }
}
const WITHDRAWN_ON_DEMAND = onDemand('withdrawn');
const NLRI_ON_DEMAND = onDemand('nlri');

/** The withdrawn routes and NLRI fields of an UPDATE, octets as received (RFC 4271 §4.3). */
export interface ReceivedNlri {
  readonly withdrawn: Buffer;
  readonly nlri: Buffer;
  /** Whether each prefix is preceded by a path identifier (RFC 7911). */
  readonly addPath: boolean;
  /** How many prefixes each field holds. */
  readonly withdrawnCount: number;
  readonly nlriCount: number;
  /**
   * True while the message's `withdrawn` and `nlri` have been neither read nor set: they are
   * then exactly these fields, and a reader that needs only the octets leaves them unmade.
   */
  readonly unread: boolean;
  /**
   * True while the message's `attributes` have been neither read nor set: they are then exactly
   * receivedAttributes (checked, 4-octet AS numbers, no MP_REACH_NLRI or MP_UNREACH_NLRI).
   */
  readonly attributesUnread: boolean;
}

/**
 * Whether the path attributes of an UPDATE decoded without a problem were neither read nor set
 * since: they are then exactly receivedAttributes, MP_REACH_NLRI and MP_UNREACH_NLRI included
 * (the codec checked them all). False for a message built in code or copied.
 */
export function attributesUnread(m: UpdateMessage | ReceivedUpdate): boolean {
  return receivedOf(m)?.attributesUnread === true;
}

/**
 * Whether attributes still unread (attributesUnread) hold MP_REACH_NLRI or MP_UNREACH_NLRI: the
 * codec saw while checking them, so a reader of the octets need not look for them.
 */
export function unreadMpAttributes(m: UpdateMessage | ReceivedUpdate): boolean {
  const r = receivedOf(m);
  return r?.attributesUnread === true && r.mpChecked;
}

/**
 * The IPv4 withdrawn routes and NLRI fields of an UPDATE decoded without a problem, sharing
 * the received buffer; undefined for one built in code or copied, with no IPv4 prefixes, or
 * whose `withdrawn` or `nlri` was set since. They hold exactly the prefixes of `withdrawn` and
 * `nlri`, in order, unless those arrays were changed in place after decoding.
 */
export function receivedNlri(m: UpdateMessage | ReceivedUpdate): ReceivedNlri | undefined {
  const r = receivedOf(m);
  return r === undefined || r.replaced || r.withdrawnCount + r.nlriCount === 0 ? undefined : r;
}

/** Whether an UPDATE has no IPv4 withdrawn routes and no IPv4 NLRI: from its octets while its lists are unmade. */
export function withoutIpv4Prefixes(m: UpdateMessage | ReceivedUpdate): boolean {
  const r = receivedOf(m);
  if (r?.unread) return r.withdrawnCount + r.nlriCount === 0;
  const msg = updateMessageOf(m);
  return msg.withdrawn.length === 0 && msg.nlri.length === 0;
}

/**
 * The path attributes of an UPDATE exactly as they came off the wire, when the UPDATE decoded
 * without a problem on a session with 4-octet AS numbers (so that decodePathAttributes reads
 * them back as they were decoded); empty for one without attributes (a withdrawal); undefined
 * otherwise, and for one built in code or copied. Shares the received buffer.
 */
export function receivedAttributes(m: UpdateMessage | ReceivedUpdate): Buffer | undefined {
  return receivedOf(m)?.attributes;
}

function missing(type: number): Problem {
  return {
    action: 'treat-as-withdraw',
    subcode: S.MISSING_WELL_KNOWN_ATTRIBUTE,
    message: `missing well-known attribute ${type}`,
    data: Buffer.from([type]),
  };
}

function worstOf(problems: Problem[], update: UpdateMessage): BgpError {
  let worst = problems[0];
  for (const p of problems) if (moreSevere(p.action, worst.action) !== worst.action) worst = p;
  const err = new BgpError(`UPDATE: ${worst.message}`, ErrorCode.UPDATE_MESSAGE, worst.subcode, worst.data, worst.action);
  if (worst.action !== 'session-reset') err.update = update;
  return err;
}

/** Writes an UPDATE body after the header room the writer was reset to. */
export function writeUpdate(w: Writer, m: UpdateMessage, options: CodecOptions): void {
  const addPath = options.addPath?.['ipv4-unicast'] === true;
  const withdrawnLengthAt = w.pos;
  w.u16(0);
  writeNlriInto(w, m.withdrawn, false, addPath);
  w.buf.writeUInt16BE(w.pos - withdrawnLengthAt - 2, withdrawnLengthAt);
  const attrLengthAt = w.pos;
  w.u16(0);
  writeAttributes(w, m.attributes, options);
  const attrLength = w.pos - attrLengthAt - 2;
  if (attrLength > 0xffff) throw new RangeError(`path attributes are ${attrLength} octets, more than an UPDATE can hold`);
  w.buf.writeUInt16BE(attrLength, attrLengthAt);
  writeNlriInto(w, m.nlri, false, addPath);
}

/** The End-of-RIB marker of a family: an empty UPDATE for IPv4, an empty MP_UNREACH otherwise. */
export function endOfRib(family: AddressFamily): UpdateMessage {
  if (family === 'ipv4-unicast') return { type: 'update', withdrawn: [], attributes: {}, nlri: [] };
  return { type: 'update', withdrawn: [], attributes: { mpUnreach: { afi: afiOf(family), safi: Safi.UNICAST, withdrawn: [] } }, nlri: [] };
}

/** The family whose End-of-RIB this UPDATE is, or undefined when it is not one. */
export function endOfRibFamily(m: UpdateMessage | ReceivedUpdate): AddressFamily | undefined {
  // Prefix lists and attributes not made yet (a speaker asks this of every UPDATE) are read from their octets.
  if (!withoutIpv4Prefixes(m)) return undefined;
  const r = receivedOf(m);
  if (r?.attributesUnread) return r.endOfRibFamily();
  const a = updateMessageOf(m).attributes;
  let count = 0;
  for (const key in a) if (key !== 'wire' && a[key as keyof typeof a] !== undefined) count++;
  if (count === 0) return 'ipv4-unicast';
  if (count === 1 && a.mpUnreach && !a.mpUnreach.raw && a.mpUnreach.withdrawn?.length === 0) {
    return familyOf(a.mpUnreach.afi, a.mpUnreach.safi);
  }
  return undefined;
}
