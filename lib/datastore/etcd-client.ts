// The etcd connection the etcd backend, its watches and its IPAM store share: the options,
// the key layout, the client settings, and raw transactions (compare, then put/delete/range)
// with gRPC failures turned into DatastoreUnavailableError.
//
// Layout under the prefix P (default /podroute/<name>, name "default"):
//   P/id              random id, created by the first write; its create revision is the base of
//                     this store's revisions (resourceVersion = etcd mod revision - base), so an
//                     empty store is at revision 0 and its first write at 1 as in every backend
//   P/epoch           0 or absent until `podroute ipam repair` sets it (ms since 1970)
//   P/kr/<Kind>       empty value rewritten by every change to that kind: its mod revision is
//                     the last revision that changed the kind (the IPPool set-wide guard)
//   P/kv/<Kind>/<key> the resource's JSON (the revision is etcd's, beside the value)
//   P/ipam/aff/<node> JSON { block name: pool name } of the blocks the node holds the affinity of
// Every write is one etcd transaction that compares P/id with the id this client knows, so a
// client never writes into a store emptied or replaced under it with revisions of the old one.
import type { Etcd3, IOptions } from 'etcd3';
import { DatastoreError, DatastoreUnavailableError } from './errors.js';
import type { Kind } from '../resources/index.js';

export interface EtcdDatastoreOptions {
  /** Client URLs of the members, e.g. ['http://10.0.0.1:2379', 'http://10.0.0.2:2379'] (or unix:///path sockets). */
  endpoints: string[];
  /** Several datastores can share one etcd under different names (default "default"). */
  name?: string;
  /** The key prefix (default /podroute/<name>); overrides name. */
  prefix?: string;
  /**
   * Revisions of history to keep for watchers that fall behind: the client compacts etcd to
   * (revision - logLength) as it writes. Compaction is etcd-wide, so leave this unset (the
   * default) when etcd runs its own --auto-compaction, or shares its keyspace with others.
   */
  logLength?: number;
  /** A call without a reply after this long fails (default 5,000 ms). */
  commandTimeoutMs?: number;
  /** How long open() waits for the first answer (default 10,000 ms). */
  connectWaitMs?: number;
}

export interface Keys {
  readonly prefix: string;
  readonly id: string;
  readonly epoch: string;
  kr(kind: Kind): string;
  kv(kind: Kind, key?: string): string;
  aff(node: string): string;
}

export function etcdKeys(o: Pick<EtcdDatastoreOptions, 'name' | 'prefix'>): Keys {
  const p = (o.prefix ?? `/podroute/${o.name ?? 'default'}`).replace(/\/+$/, '');
  return {
    prefix: `${p}/`,
    id: `${p}/id`,
    epoch: `${p}/epoch`,
    kr: (kind) => `${p}/kr/${kind}`,
    kv: (kind, key) => `${p}/kv/${kind}/${key ?? ''}`,
    aff: (node) => `${p}/ipam/aff/${node}`,
  };
}

/** Checks the options before anything connects; errors name the field. */
export function checkEtcdOptions(o: EtcdDatastoreOptions): void {
  if (!Array.isArray(o.endpoints) || o.endpoints.length === 0)
    throw new Error('datastore.endpoints: at least one etcd client URL is needed');
  for (const [i, e] of o.endpoints.entries()) {
    if (typeof e === 'string' && /^unix:\/\/\/\S+$/.test(e)) continue;
    if (typeof e !== 'string' || !/^(https?:\/\/)?(\[[0-9a-fA-F:.]+\]|[^\s/:[\]]+)(:\d+)?\/?$/.test(e))
      throw new Error(`datastore.endpoints[${i}]: ${JSON.stringify(e)} is not an etcd client URL (http://host:2379)`);
  }
  if (o.prefix !== undefined && (typeof o.prefix !== 'string' || !o.prefix.startsWith('/') || o.prefix.length < 2))
    throw new Error(`datastore.prefix: ${JSON.stringify(o.prefix)} must be a key path such as /podroute/prod`);
  for (const f of ['logLength', 'commandTimeoutMs', 'connectWaitMs'] as const) {
    const v = o[f];
    if (v !== undefined && (!Number.isInteger(v) || v <= 0))
      throw new Error(`datastore.${f}: must be a positive whole number, not ${JSON.stringify(v)}`);
  }
}

// etcd3 (and gRPC under it) is loaded on first open, not on import: a CNI call on another
// datastore should not pay for it.
let Client: typeof Etcd3 | undefined;

/**
 * The client settings, and why:
 * - every call has a deadline (commandTimeoutMs): a member cut off from the leader would
 *   otherwise hold it;
 * - etcd3's own fault handling stays: a call that fails on an unreachable member is tried
 *   again (up to 3 times, members in random order, a member failing 3 times in a row skipped
 *   for 5 s). A transaction sent again after it was applied and its reply lost fails its
 *   compares, since every one of ours compares before it writes: it is never applied twice.
 */
export async function newEtcdClient(o: EtcdDatastoreOptions): Promise<Etcd3> {
  Client ??= (await import('etcd3')).Etcd3;
  const timeout = o.commandTimeoutMs ?? 5000;
  const options: IOptions = {
    hosts: o.endpoints.map((e) => (/^(https?|unix):\/\//.test(e) ? e : `http://${e}`)),
    dialTimeout: 2000,
    defaultCallOptions: () => ({ deadline: Date.now() + timeout }),
  };
  return new Client(options);
}

/** The store cannot be reached: the client's errors, said in our words. */
export function unavailable(e: unknown): Error {
  if (e instanceof DatastoreError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  return new DatastoreUnavailableError(`etcd: ${msg}`, e);
}

export interface KV {
  key: string;
  value: string;
  createRevision: number;
  modRevision: number;
}

export interface Compare {
  key: string;
  target: 'Mod' | 'Create' | 'Value' | 'Version';
  result: 'Equal' | 'Greater' | 'Less' | 'NotEqual';
  /** A revision or version for Mod/Create/Version, a string for Value. */
  value: number | string;
}

export type Op = { put: string; value: string } | { del: string } | { delPrefix: string } | { get: string } | { getPrefix: string };

export interface TxnResult {
  succeeded: boolean;
  /** The store revision the transaction ran at (for a write: the new revision). */
  revision: number;
  /** Per op: the keys a range found, or the previous values a delete removed. */
  results: KV[][];
}

/** The first key after every key that starts with `prefix` (etcd's range_end). */
function prefixEnd(prefix: string): Buffer {
  const b = Buffer.from(prefix);
  for (let i = b.length - 1; i >= 0; i--) {
    if (b[i]! < 0xff) {
      const end = Buffer.from(b.subarray(0, i + 1));
      end[i]!++;
      return end;
    }
  }
  return Buffer.from([0]);
}

type RequestOp = Parameters<Etcd3['kv']['txn']>[0]['success'] extends (infer T)[] | undefined ? T : never;

function requestOp(op: Op): RequestOp {
  if ('put' in op) return { request_put: { key: Buffer.from(op.put), value: Buffer.from(op.value) } };
  if ('del' in op) return { request_delete_range: { key: Buffer.from(op.del), prev_kv: true } };
  if ('delPrefix' in op)
    return { request_delete_range: { key: Buffer.from(op.delPrefix), range_end: prefixEnd(op.delPrefix), prev_kv: true } };
  if ('get' in op) return { request_range: { key: Buffer.from(op.get) } };
  return { request_range: { key: Buffer.from(op.getPrefix), range_end: prefixEnd(op.getPrefix) } };
}

interface RawKv {
  key: Buffer;
  value: Buffer;
  create_revision: string;
  mod_revision: string;
}

export function toKV(kv: RawKv): KV {
  return {
    key: kv.key.toString(),
    value: kv.value.toString(),
    createRevision: Number(kv.create_revision),
    modRevision: Number(kv.mod_revision),
  };
}

/** One etcd transaction: if every compare holds, `then`, else `otherwise`. Atomic, at one revision. */
export async function txn(
  client: Etcd3,
  compares: readonly Compare[],
  then: readonly Op[],
  otherwise: readonly Op[] = [],
): Promise<TxnResult> {
  let res: Awaited<ReturnType<Etcd3['kv']['txn']>>;
  try {
    res = await client.kv.txn({
      compare: compares.map((c) => {
        const key = Buffer.from(c.key);
        switch (c.target) {
          case 'Mod':
            return { key, target: 'Mod', result: c.result, mod_revision: c.value };
          case 'Create':
            return { key, target: 'Create', result: c.result, create_revision: c.value };
          case 'Version':
            return { key, target: 'Version', result: c.result, version: c.value };
          default:
            return { key, target: 'Value', result: c.result, value: Buffer.from(String(c.value)) };
        }
      }),
      success: then.map(requestOp),
      failure: otherwise.map(requestOp),
    });
  } catch (e) {
    throw unavailable(e);
  }
  const results = (res.responses ?? []).map((r) => {
    const kvs = (r.response_range?.kvs ?? r.response_delete_range?.prev_kvs ?? []) as RawKv[];
    return kvs.map(toKV);
  });
  return { succeeded: res.succeeded, revision: Number(res.header.revision), results };
}

/** Compacts etcd's history up to `revision` (etcd-wide). Older revisions can no longer be watched from. */
export async function compact(client: Etcd3, revision: number): Promise<void> {
  try {
    await client.kv.compact({ revision });
  } catch (e) {
    // Already compacted further: nothing to do.
    if (/compacted/.test(String(e))) return;
    throw unavailable(e);
  }
}
