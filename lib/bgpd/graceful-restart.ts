// bgpd's side of graceful restart (RFC 4724): the `gracefulRestart` field of its file, and
// knowing at start whether the last run ended without a clean stop.
//
// The rule: a marker file is written in the state directory when the daemon starts and removed
// when it stops cleanly (SIGTERM, SIGINT, POST /stop), after its peers got their Cease. A
// marker found at start means the last run ended otherwise (a crash, kill -9, the OOM killer):
// its peers saw the TCP session end without a NOTIFICATION and hold our routes as stale, so
// this run's OPENs carry the Restart State bit. The default directory, /run/podroute, is a
// tmpfs: a reboot empties it, as it ends every session anyway.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { UnsafePathError, writePrivateFile } from '../files/index.js';
import { ConfigError, isObj, Mistakes, num, onlyKeys } from './fields.js';
import { checkedFile, checkedPath } from './paths.js';

export const DEFAULT_STATE_DIR = '/run/podroute';

export interface GracefulRestartConfig {
  /** The Restart Time we advertise (s, 0..4095). Default 120. */
  restartTime?: number;
  /** The F bit: the routes we originate are configuration, so they survive us. Default true. */
  forwardingPreserved: boolean;
  /** After a restart, longest wait for the peers' End-of-RIBs before we send (s). Default 360. */
  selectDeferTime?: number;
  /** Where the marker of a running daemon lives. */
  stateDir?: string;
}

const KEYS = new Set(['restartTime', 'forwardingPreserved', 'selectDeferTime', 'stateDir']);

export function gracefulRestartField(v: unknown, path: string): GracefulRestartConfig {
  if (v === undefined) return { forwardingPreserved: true };
  if (!isObj(v)) throw new ConfigError(`${path}: a mapping (restartTime, forwardingPreserved, selectDeferTime, stateDir)`);
  const m = new Mistakes();
  m.check(() => onlyKeys(v, KEYS, path));
  if (v.forwardingPreserved !== undefined && typeof v.forwardingPreserved !== 'boolean')
    m.note(`${path}.forwardingPreserved: ${JSON.stringify(v.forwardingPreserved)} is not true or false`);
  if (v.stateDir !== undefined) m.check(() => checkedPath(v.stateDir, `${path}.stateDir`, 'a directory path'));
  const out = {
    restartTime: v.restartTime === undefined ? undefined : m.take(() => num(v.restartTime, `${path}.restartTime`, 0, 4095), undefined),
    forwardingPreserved: v.forwardingPreserved !== false,
    selectDeferTime:
      v.selectDeferTime === undefined ? undefined : m.take(() => num(v.selectDeferTime, `${path}.selectDeferTime`, 1, 3600), undefined),
    stateDir: v.stateDir as string | undefined,
  };
  m.throwIfAny();
  return out;
}

export interface RunMarker {
  /** The last run ended without a clean stop. */
  restarted: boolean;
  /** What the last run's marker said (pid, start time), when there was one. */
  previous?: { pid?: number; started?: string };
  /** The marker's path; undefined when it could not be written (restarts then go unnoticed). */
  file?: string;
  /** Removes the marker: called on a clean stop. */
  clear(): void;
}

/**
 * Reads and replaces the marker of `name` in `dir`. An explicit directory that cannot be written
 * is a configuration error; the default one (root's /run) is skipped with `warn`.
 */
export function openRunMarker(dir: string | undefined, name: string, warn: (message: string) => void): RunMarker {
  const file = join(dir ?? DEFAULT_STATE_DIR, `${name}.running`);
  let previous: RunMarker['previous'];
  let restarted = false;
  try {
    // Checked first: a path in /proc is refused here, not read or looped on.
    checkedFile(file, 'gracefulRestart.stateDir');
    previous = JSON.parse(readFileSync(file, 'utf8')) as RunMarker['previous'];
    restarted = true;
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    // A marker cut short by the crash it records is still a marker.
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') restarted = true;
  }
  try {
    // The folder made 0755 and the marker 0600 whatever the umask; a folder another user could
    // tamper with is refused, the default one too: they could fake or hide a crash.
    writePrivateFile(file, JSON.stringify({ pid: process.pid, started: new Date().toISOString() }) + '\n', 'gracefulRestart.stateDir');
  } catch (e) {
    if (e instanceof UnsafePathError) throw new ConfigError(e.message);
    const message = `gracefulRestart.stateDir: cannot write ${file}: ${(e as Error).message}`;
    if (dir !== undefined) throw new ConfigError(message);
    warn(`${message}; a restart after a crash will not be announced to peers`);
    return { restarted, previous, clear: () => undefined };
  }
  return { restarted, previous, file, clear: () => rmSync(file, { force: true }) };
}
