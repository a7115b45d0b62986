// Lua run inside Redis. Every write in the system goes through ds_put / ds_del below, so
// "the value changed" and "the change was logged" happen in one atomic script.
//
// Layout, for a datastore named N (the {N} hash tag keeps every key in one Cluster slot):
//   podroute:{N}:rev          INCR counter: the store revision, one per write
//   podroute:{N}:id           random id set by the first client; changes if Redis comes back empty
//   podroute:{N}:kv:<Kind>    HASH key -> "<revision>:<json>" (value and its revision read in one HGET)
//   podroute:{N}:epoch        0 or absent until `podroute ipam repair` sets it (ms since 1970)
//   podroute:{N}:kr           HASH kind -> last revision that changed that kind (set-wide guards)
//   podroute:{N}:log          STREAM, entry id "<revision>-0", fields t (put|del) k n v
//
// Why a stream whose ids are the revisions: a watcher that saw revision R asks XREAD for
// ids after R-0 and gets exactly the later writes, in order, with no duplicates, however
// long it was disconnected, because revisions have no holes. If the stream was trimmed
// past R, the first id it gets is not R+1 and it knows to resync. Keyspace notifications
// would not do: Redis Pub/Sub drops messages while the subscriber is disconnected.

export const PRELUDE = `
local P = ARGV[1]
redis.call('SET', P .. ':id', ARGV[2], 'NX')
local MAXLEN = ARGV[3]
local function ds_get(kind, key)
  local raw = redis.call('HGET', P .. ':kv:' .. kind, key)
  if not raw then return nil, nil end
  local i = string.find(raw, ':', 1, true)
  return tonumber(string.sub(raw, 1, i - 1)), string.sub(raw, i + 1)
end
local function ds_put(kind, key, json)
  local rev = redis.call('INCR', P .. ':rev')
  redis.call('HSET', P .. ':kv:' .. kind, key, rev .. ':' .. json)
  redis.call('HSET', P .. ':kr', kind, rev)
  redis.call('XADD', P .. ':log', 'MAXLEN', '~', MAXLEN, rev .. '-0', 't', 'put', 'k', kind, 'n', key, 'v', json)
  return rev
end
local function ds_del(kind, key)
  local _, json = ds_get(kind, key)
  if not json then return nil end
  local rev = redis.call('INCR', P .. ':rev')
  redis.call('HDEL', P .. ':kv:' .. kind, key)
  redis.call('HSET', P .. ':kr', kind, rev)
  redis.call('XADD', P .. ':log', 'MAXLEN', '~', MAXLEN, rev .. '-0', 't', 'del', 'k', kind, 'n', key, 'v', json)
  return rev
end
`;

export const WRITE = `
local mode, kind, key, json = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local expect, gkind, gsince = ARGV[8], ARGV[9], ARGV[10]
local cur = ds_get(kind, key)
if mode == 'create' and cur then return {'exists'} end
if mode == 'update' and not cur then return {'notfound'} end
if expect ~= '' and cur and cur ~= tonumber(expect) then return {'conflict', cur} end
if gkind ~= '' then
  local kr = tonumber(redis.call('HGET', P .. ':kr', gkind) or '0')
  if kr > tonumber(gsince) then return {'kindchanged', kr} end
end
return {'ok', ds_put(kind, key, json)}
`;

export const DELETE = `
local kind, key, expect = ARGV[4], ARGV[5], ARGV[6]
local cur, json = ds_get(kind, key)
if not cur then return {'notfound'} end
if expect ~= '' and cur ~= tonumber(expect) then return {'conflict', cur} end
return {'ok', ds_del(kind, key), json}
`;

export const SNAPSHOT = `
local out = { redis.call('GET', P .. ':rev') or '0', redis.call('GET', P .. ':id') }
for i = 4, #ARGV do
  local kind = ARGV[i]
  table.insert(out, kind)
  table.insert(out, redis.call('HGET', P .. ':kr', kind) or '0')
  table.insert(out, redis.call('HGETALL', P .. ':kv:' .. kind))
end
return out
`;

export const HEAD = `
return { redis.call('GET', P .. ':rev') or '0', redis.call('GET', P .. ':id') }
`;

export const MARK_REPAIRED = `
local epoch = math.max(tonumber(redis.call('GET', P .. ':epoch') or '0') + 1, tonumber(ARGV[4]))
redis.call('SET', P .. ':epoch', string.format('%d', epoch))
return { redis.call('GET', P .. ':id'), redis.call('GET', P .. ':epoch'), redis.call('GET', P .. ':rev') or '0' }
`;
