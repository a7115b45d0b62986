// The paths a daemon's configuration names (state directories, sockets, key files): checked
// before anything listens, and directories made one component at a time. procfs answers a mkdir
// in a directory that exists with ENOENT, and Node's recursive mkdir then makes the parent again
// and retries for ever, burning a core; here every path costs at most one step per component,
// and /proc and /sys, the kernel's own trees, are refused by the field that named them.
import { type Stats, mkdirSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { ConfigError } from './fields.js';

const KERNEL_TREES = ['/proc', '/sys'];

/** The kernel tree `path` is in, if any. */
function kernelTree(path: string): string | undefined {
  return KERNEL_TREES.find((t) => path === t || path.startsWith(`${t}/`));
}

/**
 * Where `path` leads: its deepest existing ancestor with the symbolic links resolved (/dev/fd is
 * /proc/self/fd), then the rest as written. One step per component of the path.
 */
function whereItLeads(path: string): string {
  const rest: string[] = [];
  for (let at = path; ; at = dirname(at)) {
    try {
      return join(realpathSync(at), ...rest);
    } catch {
      if (dirname(at) === at) return path;
      rest.unshift(basename(at));
    }
  }
}

/**
 * A path a daemon makes or reads a file at: a non-empty string, not in /proc or /sys, as written
 * or through a symbolic link. Returns it as written; `what` says what it names, for the message.
 */
export function checkedPath(v: unknown, field: string, what = 'a path'): string {
  if (typeof v !== 'string' || v === '') throw new ConfigError(`${field}: ${JSON.stringify(v)} is not ${what}`);
  if (v.includes('\0')) throw new ConfigError(`${field}: ${JSON.stringify(v)} holds a NUL byte`);
  const absolute = resolve(v);
  const refuse = (shown: string, tree: string) =>
    new ConfigError(`${field}: ${shown} is under ${tree}, the kernel's own file system, where no daemon's file belongs`);
  const written = kernelTree(absolute);
  if (written !== undefined) throw refuse(v, written);
  // Only when the path as written is elsewhere: a link (/dev/fd is /proc/self/fd) may lead there.
  const leads = whereItLeads(absolute);
  const linked = kernelTree(leads);
  if (linked !== undefined) throw refuse(`${v} (${leads})`, linked);
  return v;
}

/** Whether `path` is there, and what it is: undefined when it is not. */
function statOf(path: string, field: string): Stats | undefined {
  try {
    return statSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError(`${field}: ${path}: ${(e as Error).message}`);
  }
}

/**
 * Makes `dir` and the directories above it that are missing, each with `mode` (less the umask),
 * one mkdir per missing component: a file system that answers strangely fails the call, it does
 * not loop. Errors are ConfigErrors naming `field`.
 */
export function makeDirectory(dir: string, field: string, mode = 0o755): void {
  checkedPath(dir, field, 'a directory path');
  let at: string = sep;
  for (const part of resolve(dir).split(sep).filter(Boolean)) {
    at = join(at, part);
    let stat = statOf(at, field);
    if (stat === undefined) {
      try {
        mkdirSync(at, { mode });
        continue;
      } catch (e) {
        // Another process made it meanwhile: fine if it is a directory.
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new ConfigError(`${field}: cannot make ${at}: ${(e as Error).message}`);
        stat = statOf(at, field);
      }
    }
    if (!stat?.isDirectory()) throw new ConfigError(`${field}: ${at} is not a directory`);
  }
}

/**
 * A file to be read whole (a key): when it is there, a regular file, so that reading it ends (a
 * FIFO or a device would not). One that is missing is left to the reader to report.
 */
export function checkedFile(v: unknown, field: string): string {
  const path = checkedPath(v, field, 'a file name');
  const stat = statOf(path, field);
  if (stat !== undefined && !stat.isFile()) throw new ConfigError(`${field}: ${path} is not a regular file`);
  return path;
}
