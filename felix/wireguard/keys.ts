// WireGuard keys: Curve25519 (X25519) pairs in WireGuard's text form, base64 of 32 bytes, made
// and derived with Node's own crypto so no tool has to see a private key.
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';

// The DER header of a PKCS#8 X25519 private key: what comes before its 32 raw bytes.
const PKCS8_X25519 = Buffer.from('302e020100300506032b656e04220420', 'hex');

export interface WireguardKeyPair {
  readonly privateKey: string;
  readonly publicKey: string;
}

/** True for WireGuard's text form of a key: base64 of exactly 32 bytes. */
export function isWireguardKey(text: unknown): text is string {
  return typeof text === 'string' && /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/.test(text);
}

export function generateWireguardKeyPair(): WireguardKeyPair {
  const { privateKey } = generateKeyPairSync('x25519');
  const raw = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(PKCS8_X25519.length);
  const priv = raw.toString('base64');
  return { privateKey: priv, publicKey: wireguardPublicKey(priv) };
}

/** The public key of a private key in WireGuard's text form; throws on one that is not. */
export function wireguardPublicKey(privateKey: string): string {
  if (!isWireguardKey(privateKey)) throw new Error('a WireGuard private key is base64 of 32 bytes');
  const key = createPrivateKey({
    key: Buffer.concat([PKCS8_X25519, Buffer.from(privateKey, 'base64')]),
    format: 'der',
    type: 'pkcs8',
  });
  const spki = createPublicKey(key).export({ format: 'der', type: 'spki' });
  return spki.subarray(spki.length - 32).toString('base64');
}
