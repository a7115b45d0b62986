// Canonical element text: what felix wants and what the kernel gives back compare as strings,
// whether the text came canonical (as a compiler writes it) or not.
import assert from 'node:assert/strict';
import { canonicalElements, canonicalKey } from '../../../felix/policy/element-text.js';
import { checkText } from '../../../felix/policy/table-state.js';

describe('felix/policy element text', () => {
  it('makes a map key canonical component by component, and leaves a canonical one as it is', () => {
    const type = 'ipv4_addr . inet_proto . inet_service . integer';
    assert.equal(canonicalKey(type, '10.96.0.1 . tcp . 80 . 3'), '10.96.0.1 . tcp . 80 . 3');
    assert.equal(canonicalKey(type, ' 10.96.0.1/32 . 6 . 80 . 3'), '10.96.0.1 . tcp . 80 . 3');
    assert.equal(canonicalKey('ipv6_addr . inet_service', '2001:DB8:0::1 . 443'), '2001:db8::1 . 443');
    assert.equal(canonicalKey('ipv4_addr', '10.0.0.0/24'), '10.0.0.0/24');
    assert.equal(canonicalKey('ipv4_addr', '10.0.0.1/24'), '10.0.0.0/24');
    // A key with the wrong number of components is kept (trimmed) for nft to refuse.
    assert.equal(canonicalKey(type, ' 10.96.0.1 . tcp '), '10.96.0.1 . tcp');
  });

  it('keeps an IPv4 address as nft prints it, and reads any other text that looks like one', () => {
    for (const printed of ['10.0.0.1', '0.0.0.0', '255.255.255.255', '192.168.10.100'])
      assert.equal(canonicalKey('ipv4_addr', printed), printed);
    assert.equal(canonicalKey('ipv4_addr', '10.0.0.1/32'), '10.0.0.1');
    assert.equal(canonicalKey('ipv4_addr', '10.0.0.0-10.0.0.255'), '10.0.0.0/24');
    // Not addresses (a leading zero, a byte over 255, too few or many bytes): kept for nft to refuse.
    for (const unread of ['10.0.0.01', '010.0.0.1', '256.1.1.1', '1.2.3', '1.2.3.4.5', '1..2.3', '1.2.3.1000'])
      assert.equal(canonicalKey('ipv4_addr', unread), unread);
  });

  it("makes a set's elements canonical and each once, canonical or not as given", () => {
    const type = 'ipv4_addr . ipv4_addr';
    assert.deepEqual(canonicalElements(type, false, ['10.0.0.1 . 10.0.0.1', '10.0.0.1/32 . 10.0.0.1', '10.0.0.2 . 10.0.0.2']), [
      '10.0.0.1 . 10.0.0.1',
      '10.0.0.2 . 10.0.0.2',
    ]);
  });

  it('checks text with and without the characters that matter alike', () => {
    checkText('10.0.0.1 . tcp . 80', 'key', ',{}');
    checkText('log prefix "a;b#c"', 'expr');
    checkText('{ a }', 'expr');
    assert.throws(() => checkText('{ a }', 'key', ',{}'), /key: "\{ a \}" has "\{" outside quotes/);
    assert.throws(() => checkText('a ] b', 'key', ']^-\\'), /has "\]" outside quotes/);
    assert.throws(() => checkText('a - b', 'key', ']^-\\'), /has "-" outside quotes/);
    assert.throws(() => checkText('a, b', 'key', ',{}'), /key: "a, b" has "," outside quotes/);
    assert.throws(() => checkText('accept; drop', 'expr'), /has ";" outside quotes/);
    assert.throws(() => checkText('accept\ndrop', 'expr'), /has a line break/);
    assert.throws(() => checkText('log prefix "a', 'expr'), /has an unclosed quote/);
    assert.throws(() => checkText('  ', 'expr'), /expr: is empty/);
  });
});
