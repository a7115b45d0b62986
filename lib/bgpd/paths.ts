// The paths a daemon's configuration names (state directories, sockets, key files): checked
// before anything listens, each refused by the field that named it. Folders are made by
// lib/files, one component at a time.
import { type Stats, statSync } from 'node:fs';
import { kernelTreeProblem } from '../files/index.js';
import { ConfigError } from './fields.js';

/**
 * A path a daemon makes or reads a file at: a non-empty string, not in /proc or /sys, as written
 * or through a symbolic link. Returns it as written; `what` says what it names, for the message.
 */
export function checkedPath(v: unknown, field: string, what = 'a path'): string {
  if (typeof v !== 'string' || v === '') throw new ConfigError(`${field}: ${JSON.stringify(v)} is not ${what}`);
  if (v.includes('\0')) throw new ConfigError(`${field}: ${JSON.stringify(v)} holds a NUL byte`);
  const problem = kernelTreeProblem(v);
  if (problem !== undefined) throw new ConfigError(`${field}: ${problem}`);
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
 * A file to be read whole (a key): when it is there, a regular file, so that reading it ends (a
 * FIFO or a device would not). One that is missing is left to the reader to report.
 */
export function checkedFile(v: unknown, field: string): string {
  const path = checkedPath(v, field, 'a file name');
  const stat = statOf(path, field);
  if (stat !== undefined && !stat.isFile()) throw new ConfigError(`${field}: ${path} is not a regular file`);
  return path;
}
