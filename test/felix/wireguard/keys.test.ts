// WireGuard keys made with Node's crypto: the same public key as wireguard-tools derives, and
// WireGuard's text form checked.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { generateWireguardKeyPair, isWireguardKey, wireguardPublicKey } from '../../../felix/index.js';

describe('felix WireGuard keys', () => {
  it('a pair is two keys in WireGuard text form, the public one derived from the private one', () => {
    const a = generateWireguardKeyPair();
    const b = generateWireguardKeyPair();
    assert.ok(isWireguardKey(a.privateKey) && isWireguardKey(a.publicKey), 'base64 of 32 bytes');
    assert.notEqual(a.privateKey, b.privateKey, 'each pair is new');
    assert.equal(wireguardPublicKey(a.privateKey), a.publicKey);
  });

  it('the public key is the one `wg pubkey` gives (RFC 7748 X25519)', function () {
    const priv = generateWireguardKeyPair().privateKey;
    const r = spawnSync('wg', ['pubkey'], { input: `${priv}\n`, encoding: 'utf8' });
    if (r.error || r.status !== 0) this.skip(); // wireguard-tools is installed by test/ensure-deps.sh
    assert.equal(wireguardPublicKey(priv), r.stdout.trim());
  });

  it('a known vector: the RFC 7748 section 6.1 key pair', () => {
    const priv = Buffer.from('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a', 'hex').toString('base64');
    const pub = Buffer.from('8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a', 'hex').toString('base64');
    assert.equal(wireguardPublicKey(priv), pub);
  });

  it('what is not a key is refused by name', () => {
    for (const bad of ['', 'abc', 'A'.repeat(44), `${'A'.repeat(43)}=x`, 42])
      assert.equal(isWireguardKey(bad), false, `${bad} is not a key`);
    assert.throws(() => wireguardPublicKey('nope'), /WireGuard private key/);
  });
});
