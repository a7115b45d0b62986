// A peer's TCP-MD5 password as a daemon's file gives it: the text itself, or where to read it,
// so that the secret need not sit in the configuration file: `{ file: PATH }` (a file holding
// only the password, as a mounted secret is; one trailing newline is not part of it) or
// `{ env: NAME }` (an environment variable of the daemon). Read once, when the file is read.
import { readFileSync } from 'node:fs';
import { TCP_MD5_MAX_KEY_OCTETS } from '../../bgp/index.js';
import { ConfigError, isObj, onlyKeys } from './fields.js';
import { checkedFile } from './paths.js';

const SOURCE_KEYS = new Set(['file', 'env']);

export function password(v: unknown, path: string, env: NodeJS.ProcessEnv = process.env): string {
  if (typeof v === 'string') return checkText(v, path);
  if (!isObj(v) || Object.keys(v).length !== 1) throw new ConfigError(`${path}: a string, { file: PATH } or { env: NAME }`);
  onlyKeys(v, SOURCE_KEYS, path);
  if (v.file !== undefined) {
    if (typeof v.file !== 'string' || v.file === '') throw new ConfigError(`${path}.file: a file name`);
    checkedFile(v.file, `${path}.file`);
    let text: string;
    try {
      text = readFileSync(v.file, 'utf8');
    } catch (e) {
      throw new ConfigError(`${path}.file: ${(e as Error).message}`);
    }
    return checkText(text.replace(/\r?\n$/, ''), `${path}.file (${v.file})`);
  }
  if (typeof v.env !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(v.env))
    throw new ConfigError(`${path}.env: an environment variable name`);
  const text = env[v.env];
  if (text === undefined) throw new ConfigError(`${path}.env: ${v.env} is not set`);
  return checkText(text, `${path}.env (${v.env})`);
}

/** Never echoes the password: errors say only what is wrong with it. */
function checkText(text: string, path: string): string {
  if (text === '') throw new ConfigError(`${path}: the password is empty`);
  const octets = Buffer.byteLength(text);
  if (octets > TCP_MD5_MAX_KEY_OCTETS)
    throw new ConfigError(`${path}: the password has ${octets} octets (TCP-MD5 keys are at most ${TCP_MD5_MAX_KEY_OCTETS})`);
  return text;
}
