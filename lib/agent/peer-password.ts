// A BGPPeer's TCP-MD5 password as the agent finds it. A plain `password` is the text itself;
// Calico's `secretKeyRef: { name, key }` names a Kubernetes secret, which the agent reads where
// a pod gets one without asking the API server: the file `<PODROUTE_SECRETS_DIR>/<name>/<key>`
// (the secret mounted as a volume, each key a file), else the environment variable
// `PODROUTE_SECRET_<NAME>_<KEY>` (upper case, every other character `_`, as `env.valueFrom`
// would be written). Read at every reconcile, so a rotated secret replaces the session.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TCP_MD5_MAX_KEY_OCTETS } from '../../bgp/index.js';

export type PasswordSource = string | { secretKeyRef: { name: string; key: string } };

export interface SecretSources {
  /** Where secrets are mounted: <dir>/<name>/<key>. */
  dir?: string;
  env: NodeJS.ProcessEnv;
}

export function secretSources(env: NodeJS.ProcessEnv = process.env): SecretSources {
  return { dir: env.PODROUTE_SECRETS_DIR || undefined, env };
}

/** PODROUTE_SECRET_<NAME>_<KEY>: bgp-secrets / rack.1 → PODROUTE_SECRET_BGP_SECRETS_RACK_1. */
export function secretEnvName(name: string, key: string): string {
  const part = (s: string) => s.toUpperCase().replace(/[^A-Z0-9]/g, '_');
  return `PODROUTE_SECRET_${part(name)}_${part(key)}`;
}

/** The password, or an error saying where it was looked for (never what it is). */
export function resolvePassword(source: PasswordSource, sources: SecretSources): string {
  if (typeof source === 'string') return checked(source, 'password');
  const { name, key } = source.secretKeyRef;
  const what = `password secretKeyRef ${name}/${key}`;
  // A name or key that climbs out of the directory is no secret of ours.
  const safe = (s: string) => s !== '' && s !== '.' && s !== '..' && !s.includes('/');
  if (!safe(name) || !safe(key)) throw new Error(`${what}: not a secret name and key`);
  const looked: string[] = [];
  if (sources.dir) {
    const file = join(sources.dir, name, key);
    let text: string | undefined;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`${what}: ${(e as Error).message}`);
      looked.push(`no file ${file}`);
    }
    // As a mounted secret is written: the value itself; a trailing newline from an editor is not part of it.
    if (text !== undefined) return checked(text.replace(/\r?\n$/, ''), `${what} (${file})`);
  } else {
    looked.push('PODROUTE_SECRETS_DIR not set');
  }
  const variable = secretEnvName(name, key);
  const value = sources.env[variable];
  if (value !== undefined) return checked(value, `${what} (${variable})`);
  looked.push(`no ${variable} in the environment`);
  throw new Error(`${what}: not found (${looked.join(', ')})`);
}

function checked(text: string, what: string): string {
  if (text === '') throw new Error(`${what}: the password is empty`);
  const octets = Buffer.byteLength(text);
  if (octets > TCP_MD5_MAX_KEY_OCTETS) throw new Error(`${what}: ${octets} octets (TCP-MD5 keys are at most ${TCP_MD5_MAX_KEY_OCTETS})`);
  return text;
}
