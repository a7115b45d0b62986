// The `datastore:` mapping of a settings file (node run's), checked field by field: its type
// (memory, redis or etcd) decides which fields it may hold. Mistakes are collected with their
// path so that the caller reports them together with the rest of the file's.
import type { DatastoreConfig } from '../datastore/index.js';
import { closestName } from '../resources/index.js';

type Check = 'text' | 'whole' | 'sentinels' | 'endpoints' | 'mapping';

const COMMON: Record<string, Check> = { logLength: 'whole', commandTimeoutMs: 'whole', connectWaitMs: 'whole' };

const FIELDS: Record<DatastoreConfig['type'], Record<string, Check>> = {
  memory: { logLength: 'whole' },
  redis: {
    ...COMMON,
    url: 'text',
    sentinels: 'sentinels',
    sentinelName: 'text',
    sentinelPassword: 'text',
    name: 'text',
    minReplicas: 'whole',
    replicaAckTimeoutMs: 'whole',
    redisOptions: 'mapping',
  },
  etcd: { ...COMMON, endpoints: 'endpoints', name: 'text', prefix: 'text' },
};

const isMapping = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isWhole = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/** Why `v` is not what `check` asks for, or undefined when it is. */
function mistake(check: Check, v: unknown, path: string): string[] {
  const shown = JSON.stringify(v);
  switch (check) {
    case 'text':
      return typeof v === 'string' ? [] : [`${path}: ${shown} is not a string`];
    case 'whole':
      return isWhole(v) ? [] : [`${path}: ${shown} is not a whole number`];
    case 'mapping':
      return isMapping(v) ? [] : [`${path}: ${shown} is not a mapping`];
    case 'endpoints':
      if (!Array.isArray(v) || v.length === 0) return [`${path}: a list of the members' URLs (http://host:2379)`];
      return v.flatMap((e, i) => (typeof e === 'string' ? [] : [`${path}[${i}]: ${JSON.stringify(e)} is not a URL`]));
    case 'sentinels':
      if (!Array.isArray(v)) return [`${path}: a list of { host, port }`];
      return v.flatMap((s, i) => {
        const at = `${path}[${i}]`;
        if (!isMapping(s)) return [`${at}: ${JSON.stringify(s)} is not { host, port }`];
        const out: string[] = [];
        for (const k of Object.keys(s)) if (k !== 'host' && k !== 'port') out.push(`${at}.${k}: unknown field`);
        if (typeof s.host !== 'string') out.push(`${at}.host: ${JSON.stringify(s.host)} is not a host name or address`);
        if (!isWhole(s.port)) out.push(`${at}.port: ${JSON.stringify(s.port)} is not a port`);
        return out;
      });
  }
}

/** The datastore mapping at `path`, or undefined with every mistake in it added to problems. */
export function datastoreFields(v: unknown, path: string, problems: string[]): DatastoreConfig | undefined {
  if (!isMapping(v)) {
    problems.push(`${path}: ${JSON.stringify(v)} is not a mapping ({ type: memory | redis | etcd, ... })`);
    return undefined;
  }
  const type = v.type;
  if (type !== 'memory' && type !== 'redis' && type !== 'etcd') {
    problems.push(`${path}.type: ${type === undefined ? 'required' : JSON.stringify(type)} (memory, redis or etcd)`);
    return undefined;
  }
  const fields = FIELDS[type];
  const found: string[] = [];
  for (const [k, x] of Object.entries(v)) {
    if (k === 'type') continue;
    const check = fields[k];
    if (!check) {
      const near = closestName(k, Object.keys(fields));
      found.push(`${path}.${k}: unknown field of a ${type} datastore${near ? ` (did you mean ${near}?)` : ''}`);
    } else found.push(...mistake(check, x, `${path}.${k}`));
  }
  if (type === 'etcd' && v.endpoints === undefined) found.push(`${path}.endpoints: required for etcd (the members' URLs)`);
  problems.push(...found);
  return found.length ? undefined : (v as unknown as DatastoreConfig);
}
