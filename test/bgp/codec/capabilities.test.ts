// Capabilities octet for octet: long-lived graceful restart (RFC 9494, code 71) as the RFC lays
// it out, read back to the same octets, and a malformed value kept raw.
import assert from 'node:assert/strict';
import { decodeCapability, encodeCapabilityValue } from '../../../bgp/codec/capabilities.js';
import { CapabilityCode } from '../../../bgp/codec/index.js';

describe('codec: capabilities', () => {
  it('long-lived graceful restart: per family AFI (2), SAFI (1), flags (1) and a 24-bit stale time', () => {
    const cap = {
      kind: 'long-lived-graceful-restart' as const,
      families: [
        { afi: 1, safi: 1, flags: 0x80, staleTime: 3600 },
        { afi: 2, safi: 1, flags: 0, staleTime: 0xffffff },
      ],
    };
    const bytes = encodeCapabilityValue(cap);
    assert.equal(bytes.toString('hex'), '00010180000e10' + '00020100ffffff');
    assert.deepEqual(decodeCapability(CapabilityCode.LONG_LIVED_GRACEFUL_RESTART, bytes), cap);
    assert.equal(CapabilityCode.LONG_LIVED_GRACEFUL_RESTART, 71);
  });

  it('long-lived graceful restart with no family is an empty value, and reads back as one', () => {
    const empty = encodeCapabilityValue({ kind: 'long-lived-graceful-restart', families: [] });
    assert.equal(empty.length, 0);
    assert.deepEqual(decodeCapability(71, empty), { kind: 'long-lived-graceful-restart', families: [] });
  });

  it('a long-lived graceful restart value that is not whole 7-octet records is kept raw, to re-encode unchanged', () => {
    const odd = Buffer.from('0001018000', 'hex');
    assert.deepEqual(decodeCapability(71, odd), { kind: 'unknown', code: 71, value: odd });
  });
});
