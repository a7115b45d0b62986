// Folders and files a daemon keeps its sockets, state and keys in: made with the modes asked
// whatever the umask it was started under, and refused when another user could replace what is
// in them (a folder that user owns, or one writable by group or others without the sticky bit,
// anywhere on the way down from /).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fchmodSync,
  lstatSync,
  mkdirSync,
  openSync,
  realpathSync,
  renameSync,
  type Stats,
  rmSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { kernelTreeProblem } from './kernel-trees.js';

/** A folder the daemon makes: everyone may pass through to a socket; its files say who reads them. */
export const FOLDER_MODE = 0o755;
/** State and key files: the daemon's user only. */
export const PRIVATE_FILE_MODE = 0o600;

/** A path another user could tamper with. A folder that cannot be made is a plain Error, as any failed write. */
export class UnsafePathError extends Error {
  override readonly name = 'UnsafePathError';
}

const STICKY = 0o1000;
const me = (): number => process.geteuid?.() ?? 0;

/** Root, and the daemon's own user: the only owners whose folders it trusts. */
export function trustedOwner(uid: number): boolean {
  return uid === 0 || uid === me();
}

/** "uid 65534 (nobody)": the name through NSS, as `ls -l` shows it, when there is one. */
export function ownerName(uid: number): string {
  try {
    const name = execFileSync('getent', ['passwd', String(uid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split(':')[0];
    return name ? `uid ${uid} (${name})` : `uid ${uid}`;
  } catch {
    return `uid ${uid}`;
  }
}

const octal = (mode: number) => `0${(mode & 0o7777).toString(8).padStart(3, '0')}`;

/** Why another user could replace what the folder `path` (already lstat'ed) holds, or undefined. */
function folderProblem(path: string, st: Stats): string | undefined {
  const owned = () => `${path} is owned by ${ownerName(st.uid)} with mode ${octal(st.mode)}`;
  if (!trustedOwner(st.uid)) return `${owned()}: that user could replace what is in it; make it root's (or this daemon's user's)`;
  // A sticky folder (/tmp) lets others add files but not rename or remove ours.
  if (st.mode & 0o022 && !(st.mode & STICKY)) return `${owned()}: group or others may write in it and so replace what is in it; chmod go-w`;
  return undefined;
}

/** Each folder from / down to `path`: "/", "/run", "/run/podroute". */
function prefixes(path: string): string[] {
  const parts = path.split(sep).filter(Boolean);
  return [sep, ...parts.map((_, i) => sep + parts.slice(0, i + 1).join(sep))];
}

/**
 * Makes `folder` (and the folders above it that are missing) with `mode` exactly, owned by the
 * daemon's user, and checks every folder on the way, through symlinks as well, for one another
 * user could tamper with. `what` starts every message (a config field: `control`, `cniSocket`).
 * A folder that exists keeps its mode: only a made one is set. Bounded by the path's length;
 * a folder under /proc or /sys is refused before any mkdir.
 */
export function privateFolder(folder: string, what: string, mode = FOLDER_MODE): void {
  const path = resolve(folder);
  const refuse = (why: string): never => {
    throw new UnsafePathError(`${what}: ${why}`);
  };
  // Not a danger, a failure: the caller may treat it as any failed write (a non-root daemon and root's /run).
  const fail = (why: string): never => {
    throw new Error(`${what}: ${why}`);
  };
  const inKernelTree = kernelTreeProblem(path);
  if (inKernelTree !== undefined) refuse(inKernelTree);
  for (const p of prefixes(path)) {
    let st: Stats;
    try {
      st = lstatSync(p);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return fail(`${p}: ${(e as Error).message}`);
      let made = true;
      try {
        mkdirSync(p, { mode });
      } catch (m) {
        // Another process made it meanwhile: checked below as any folder found.
        if ((m as NodeJS.ErrnoException).code !== 'EEXIST') return fail(`cannot make ${p}: ${(m as Error).message}`);
        made = false;
      }
      if (made) chmodFolder(p, mode, fail);
      st = lstatSync(p);
    }
    if (st.isSymbolicLink()) {
      // Its target is checked below, with the rest of the real path; the link itself must be trusted.
      if (!trustedOwner(st.uid)) refuse(`${p} is a symlink owned by ${ownerName(st.uid)}`);
      continue;
    }
    if (!st.isDirectory()) fail(`${p} is not a folder`);
    const problem = folderProblem(p, st);
    if (problem) refuse(problem);
  }
  const real = realpathSync(path);
  if (real === path) return;
  for (const p of prefixes(real)) {
    const st = lstatSync(p);
    if (!st.isDirectory()) fail(`${p} is not a folder`);
    const problem = folderProblem(p, st);
    if (problem) refuse(problem);
  }
}

/** Sets a folder just made to `mode` exactly: mkdir's mode passes through the umask. */
function chmodFolder(p: string, mode: number, refuse: (why: string) => never): void {
  try {
    // Opened without following a link: a folder swapped for a link since lstat is not the one changed.
    const fd = openSync(p, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    try {
      fchmodSync(fd, mode);
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    refuse(`cannot set the mode of ${p}: ${(e as Error).message}`);
  }
}

/**
 * Writes `data` to `path` with mode 0600 whatever the umask, atomically: a new file made with
 * that mode (never an existing one, never through a link), then renamed over the old. Its folder
 * is made and checked as privateFolder does.
 */
export function writePrivateFile(path: string, data: string | Uint8Array, what: string, folderMode = FOLDER_MODE): void {
  const folder = dirname(resolve(path));
  privateFolder(folder, what, folderMode);
  const tmp = join(folder, `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, PRIVATE_FILE_MODE);
  try {
    fchmodSync(fd, PRIVATE_FILE_MODE);
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off);
    closeSync(fd);
    renameSync(tmp, path);
  } catch (e) {
    try {
      closeSync(fd);
    } catch {
      // Already closed before the rename failed.
    }
    rmSync(tmp, { force: true });
    throw e;
  }
}
