// OPEN (RFC 4271 §4.2) with capabilities (RFC 5492) and extended optional parameters
// (RFC 9072). The codec checks what the message itself says; whether the peer's AS and
// identifier are the ones configured is the session's business.
import { capabilityCode, decodeCapability, encodeCapabilityValue } from './capabilities.js';
import { formatIpv4, writeIpv4 } from './address.js';
import { ErrorCode, HEADER_LENGTH, OpenSubcode } from './constants.js';
import { BgpError } from './errors.js';
import type { Capability, OpenMessage } from './types.js';

const CAPABILITIES_PARAMETER = 2;
const EXTENDED_PARAMETERS = 255;

function openError(subcode: number, message: string, data?: Buffer): BgpError {
  return new BgpError(`OPEN: ${message}`, ErrorCode.OPEN_MESSAGE, subcode, data);
}

/** Decodes the body of an OPEN (the octets after the 19-octet header). */
export function decodeOpen(b: Buffer, pos: number, end: number): OpenMessage {
  if (end - pos < 10) throw openError(OpenSubcode.UNSPECIFIC, 'shorter than its fixed fields');
  const version = b[pos];
  if (version !== 4) {
    throw openError(OpenSubcode.UNSUPPORTED_VERSION_NUMBER, `version ${version} is not 4`, Buffer.from([0, 4]));
  }
  const myAs = b.readUInt16BE(pos + 1);
  const holdTime = b.readUInt16BE(pos + 3);
  if (holdTime === 1 || holdTime === 2) {
    throw openError(OpenSubcode.UNACCEPTABLE_HOLD_TIME, `hold time ${holdTime} s (must be 0 or at least 3)`);
  }
  const bgpId = formatIpv4(b, pos + 5);
  if (b.readUInt32BE(pos + 5) === 0) throw openError(OpenSubcode.BAD_BGP_IDENTIFIER, 'BGP identifier 0.0.0.0');

  let p = pos + 10;
  let paramsLength = b[pos + 9];
  let extended = false;
  if (paramsLength === 255 && p < end && b[p] === EXTENDED_PARAMETERS) {
    if (p + 3 > end) throw openError(OpenSubcode.UNSPECIFIC, 'extended optional parameters length is cut short');
    extended = true;
    paramsLength = b.readUInt16BE(p + 1);
    p += 3;
  }
  if (p + paramsLength !== end) {
    throw openError(OpenSubcode.UNSPECIFIC, `optional parameters length ${paramsLength} does not match the message`);
  }

  const capabilities: Capability[] = [];
  const groups: number[] = [];
  while (p < end) {
    const headerLength = extended ? 3 : 2;
    if (p + headerLength > end) throw openError(OpenSubcode.UNSPECIFIC, 'optional parameter header is cut short');
    const type = b[p];
    const length = extended ? b.readUInt16BE(p + 1) : b[p + 1];
    p += headerLength;
    if (p + length > end) throw openError(OpenSubcode.UNSPECIFIC, `optional parameter ${type} overruns the message`);
    if (type !== CAPABILITIES_PARAMETER) {
      throw openError(OpenSubcode.UNSUPPORTED_OPTIONAL_PARAMETER, `optional parameter type ${type} is not supported`);
    }
    const paramEnd = p + length;
    let count = 0;
    while (p < paramEnd) {
      if (p + 2 > paramEnd) throw openError(OpenSubcode.UNSPECIFIC, 'capability header is cut short');
      const code = b[p];
      const capLength = b[p + 1];
      if (p + 2 + capLength > paramEnd) throw openError(OpenSubcode.UNSPECIFIC, `capability ${code} overruns its parameter`);
      capabilities.push(decodeCapability(code, b.subarray(p + 2, p + 2 + capLength)));
      p += 2 + capLength;
      count++;
    }
    groups.push(count);
  }
  const open: OpenMessage = { type: 'open', version, myAs, holdTime, bgpId, capabilities };
  if (extended || groups.length !== 1) open.layout = { extended, groups };
  return open;
}

export function encodeOpen(m: OpenMessage): Buffer {
  const caps = m.capabilities.map((c) => {
    const value = encodeCapabilityValue(c);
    if (value.length > 255) throw new RangeError(`capability ${c.kind} is longer than 255 octets`);
    return Buffer.concat([Buffer.from([capabilityCode(c), value.length]), value]);
  });
  let groups = m.layout?.groups;
  if (!groups || groups.reduce((a, n) => a + n, 0) !== caps.length) groups = caps.length ? [caps.length] : [];
  const params: Buffer[] = [];
  let i = 0;
  for (const n of groups) {
    params.push(Buffer.concat(caps.slice(i, i + n)));
    i += n;
  }
  const plain = params.reduce((a, p) => a + 2 + p.length, 0);
  const extended = m.layout?.extended === true || plain > 255 || params.some((p) => p.length > 255);
  const headerLength = extended ? 3 : 2;
  const paramsLength = params.reduce((a, p) => a + headerLength + p.length, 0);
  const body = 10 + (extended ? 3 : 0) + paramsLength;
  const b = Buffer.alloc(HEADER_LENGTH + body);
  let p = HEADER_LENGTH;
  b[p] = m.version;
  b.writeUInt16BE(m.myAs, p + 1);
  b.writeUInt16BE(m.holdTime, p + 3);
  writeIpv4(m.bgpId, b, p + 5);
  if (extended) {
    b[p + 9] = 255;
    b[p + 10] = EXTENDED_PARAMETERS;
    b.writeUInt16BE(paramsLength, p + 11);
    p += 13;
  } else {
    b[p + 9] = paramsLength;
    p += 10;
  }
  for (const param of params) {
    b[p] = CAPABILITIES_PARAMETER;
    if (extended) b.writeUInt16BE(param.length, p + 1);
    else b[p + 1] = param.length;
    p += headerLength;
    p += param.copy(b, p);
  }
  return b;
}
