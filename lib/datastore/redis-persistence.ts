// Which Redis persistence can lose acknowledged writes. IPAM acknowledges an address once
// Redis has it in memory; a Redis that restarts without having written it to disk comes back
// without it and hands the address out again. AOF with `appendfsync always` loses nothing,
// `everysec` up to about one second of writes, `no` whatever the kernel had not flushed;
// RDB snapshots (`save`) alone lose everything since the last snapshot.

export interface RedisPersistence {
  appendonly: string;
  appendfsync: string;
  save: string;
  /** Undefined when nothing acknowledged can be lost beyond everysec's one-second window. */
  risk?: string | undefined;
}

/** The mechanism Redis persists by: the append-only file (with or without snapshots), RDB snapshots alone, or none. */
export function persistenceMode(p: Omit<RedisPersistence, 'risk'>): 'aof' | 'rdb' | 'none' {
  if (p.appendonly === 'yes') return 'aof';
  return p.save.trim() === '' ? 'none' : 'rdb';
}

export function persistenceRisk(p: Omit<RedisPersistence, 'risk'>): string | undefined {
  if (p.appendonly !== 'yes') {
    return p.save.trim() === ''
      ? 'Redis runs with no persistence (appendonly no, no save points): a restart loses every allocation and IPAM will hand addresses out twice'
      : `Redis persists only by RDB snapshots (save "${p.save}"): a restart loses every write since the last snapshot; use appendonly yes`;
  }
  if (p.appendfsync === 'no')
    return 'Redis AOF with appendfsync no: a machine crash loses what the kernel had not flushed (tens of seconds); use always or everysec';
  return undefined;
}
