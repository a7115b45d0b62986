// The router ID and cluster ID rule (RFC 6286, RFC 4456): a non-zero dotted quad, read as ip/
// reads every IPv4 address, refused in one message by every layer that takes one.
import assert from 'node:assert/strict';
import { Rib } from '../../bgp/rib/index.js';
import { AddressError, checkedRouterId, parseRouterId } from '../../ip/index.js';
import { checkRouterId } from '../../lib/agent/index.js';
import { parseBgpdConfig } from '../../lib/bgpd/config.js';
import { parseReflectorConfig } from '../../lib/bgpd/reflector-config.js';
import { checkClusterId } from '../../reflector/index.js';

const RULE = 'is not a dotted-quad identifier (four octets, not 0.0.0.0, such as 10.0.0.1)';

/** The message a refusal carries, or undefined when `run` does not throw. */
function refusal(run: () => unknown): string | undefined {
  try {
    run();
  } catch (e) {
    return (e as Error).message;
  }
  return undefined;
}

describe('ip: router ID', () => {
  it('takes four octets as a dotted quad, as numbers from 1 to 2^32 - 1', () => {
    const good: [string, number][] = [
      ['10.0.0.1', 0x0a000001],
      ['0.0.0.1', 1],
      ['1.0.0.0', 0x01000000],
      ['192.0.2.255', 0xc00002ff],
      ['255.255.255.255', 0xffffffff],
    ];
    for (const [text, n] of good) {
      assert.equal(parseRouterId(text), n, text);
      assert.equal(checkedRouterId(text), text);
    }
  });

  it('refuses 0.0.0.0, other writings of four octets, IPv6 and what is not text, naming the field', () => {
    const bad: unknown[] = [
      '0.0.0.0',
      '010.0.0.1',
      '10.0.0',
      '10.0.0.1.2',
      '256.0.0.1',
      '10.0.0.1/32',
      ' 10.0.0.1',
      '0x0a.0.0.1',
      '167772161',
      'fd00::1',
      '::ffff:10.0.0.1',
      'hash',
      '',
      167772161,
      undefined,
      null,
    ];
    for (const v of bad) {
      const message = `peer routerId: ${JSON.stringify(v)} ${RULE}`;
      assert.throws(() => parseRouterId(v, 'peer routerId'), { name: 'AddressError', message }, String(v));
      assert.throws(() => checkedRouterId(v, 'peer routerId'), { name: 'AddressError', message }, String(v));
    }
  });

  it('the field defaults to routerId; what else the caller takes is named after the rule', () => {
    const e = refusal(() => parseRouterId('r1'));
    assert.equal(e, `routerId: "r1" ${RULE}`);
    assert.throws(() => checkedRouterId('fd00::1', 'CALICO_ROUTER_ID', 'hash'), {
      message: 'CALICO_ROUTER_ID: "fd00::1" is not a dotted-quad identifier (four octets, not 0.0.0.0, such as 10.0.0.1, or hash)',
    });
    try {
      parseRouterId('0.0.0.0', 'clusterId');
      assert.fail('0.0.0.0 was taken');
    } catch (err) {
      assert.ok(err instanceof AddressError, `${err} is not an AddressError`);
      assert.equal(err.field, 'clusterId');
      assert.equal(err.value, '0.0.0.0');
    }
  });

  it('every layer that takes a router ID or a cluster ID refuses it in these words', () => {
    const rib = new Rib({ localAs: 65000, routerId: '10.0.0.1' });
    const refusals: [string, () => unknown, string][] = [
      ['the RIB', () => new Rib({ localAs: 65000, routerId: '0.0.0.0' }), 'routerId: "0.0.0.0"'],
      ['a RIB peer', () => rib.addPeer({ address: '192.0.2.1', asn: 65001, routerId: '010.0.0.1' }), 'peer routerId: "010.0.0.1"'],
      ['the reflector', () => checkClusterId('rack-1'), 'clusterId: "rack-1"'],
      ['bgpd', () => parseBgpdConfig('asn: 65000\nrouterId: 0.0.0.0\n'), 'routerId: "0.0.0.0"'],
      ['bgpd', () => parseBgpdConfig('asn: 65000\nrouterId: 10.0.0.1\nclusterId: fd00::1\n'), 'clusterId: "fd00::1"'],
      ['the reflector file', () => parseReflectorConfig('asn: 65000\nrouterId: 10.0.0.1\nclusterId: 0.0.0.0\n'), 'clusterId: "0.0.0.0"'],
    ];
    for (const [who, run, start] of refusals) assert.equal(refusal(run), `${start} ${RULE}`, who);
    // The agent also takes `hash`, and says so after the same words.
    assert.equal(
      refusal(() => checkRouterId('0.0.0.0')),
      `routerId: "0.0.0.0" ${RULE.slice(0, -1)}, or hash)`,
    );
  });
});
