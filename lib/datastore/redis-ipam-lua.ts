// IPAM inside Redis. Each script is one atomic step: two nodes racing for the same block or
// the same address are serialised by Redis itself, and every change goes through ds_put /
// ds_del (see redis-lua.ts) so watchers see it. Besides the IPAMBlock and
// IPAMHandle objects, three indexes live beside them, written only by these scripts:
//   <P>:ipam:aff:<node>  SET of block names the node holds the affinity of
//   <P>:ipam:bp          HASH block name -> pool name
//   <P>:ipam:free        HASH block name -> free addresses
// Scripts check everything before their first write: Redis does not roll a script back.

export const IPAM_PRELUDE = `
local BLOCK, HANDLE = 'IPAMBlock', 'IPAMHandle'
local NULL = cjson.null
local function block_name(cidr) return (string.gsub(cidr, '[%.:/]', '-')) end
local function ipam_config()
  local _, j = ds_get('IPAMConfiguration', 'default')
  if not j then return {} end
  local c = cjson.decode(j)
  if type(c.spec) ~= 'table' then return {} end
  return c.spec
end
local function assign_in(name, handle, attrs)
  local _, j = ds_get(BLOCK, name)
  if not j then return nil end
  local b = cjson.decode(j)
  local s = b.spec
  if type(s.unallocated) ~= 'table' or #s.unallocated == 0 then return nil end
  if type(s.attributes) ~= 'table' then s.attributes = {} end
  local ord = table.remove(s.unallocated, 1)
  table.insert(s.attributes, { handle_id = handle, secondary = cjson.decode(attrs) })
  s.allocations[ord + 1] = #s.attributes - 1
  ds_put(BLOCK, name, cjson.encode(b))
  redis.call('HSET', P .. ':ipam:free', name, #s.unallocated)
  local _, hj = ds_get(HANDLE, handle)
  local h
  if hj then h = cjson.decode(hj) else
    h = { apiVersion = 'projectcalico.org/v3', kind = 'IPAMHandle', metadata = { name = handle }, spec = { handleID = handle, block = {} } }
  end
  if type(h.spec.block) ~= 'table' then h.spec.block = {} end
  h.spec.block[s.cidr] = (h.spec.block[s.cidr] or 0) + 1
  ds_put(HANDLE, handle, cjson.encode(h))
  local aff = s.affinity
  if aff == nil or aff == NULL then aff = '' end
  return { ord, s.cidr, aff }
end
`;

// ARGV 4.. : node, handle, attrs, pool names...
export const ASSIGN_AFFINE = `
local node, handle, attrs = ARGV[4], ARGV[5], ARGV[6]
local pools = {}
for i = 7, #ARGV do pools[ARGV[i]] = true end
local names = redis.call('SMEMBERS', P .. ':ipam:aff:' .. node)
if #names == 0 then return false end
table.sort(names)
local free = redis.call('HMGET', P .. ':ipam:free', unpack(names))
for i, name in ipairs(names) do
  if tonumber(free[i] or '0') > 0 and pools[redis.call('HGET', P .. ':ipam:bp', name) or ''] then
    local r = assign_in(name, handle, attrs)
    if r then return r end
  end
end
return false
`;

// ARGV 4.. : node, handle, attrs, pool name, pool cidr, then (name, cidr, size) per candidate
export const CLAIM = `
local node, handle, attrs, pool_name, pool_cidr = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local _, pj = ds_get('IPPool', pool_name)
if not pj then return {'nopool'} end
local pool = cjson.decode(pj)
if pool.spec.cidr ~= pool_cidr or pool.spec.disabled == true then return {'nopool'} end
local cfg = ipam_config()
if cfg.autoAllocateBlocks == false then return {'limit'} end
local aff = P .. ':ipam:aff:' .. node
local max = tonumber(cfg.maxBlocksPerHost or 0) or 0
if max > 0 and redis.call('SCARD', aff) >= max then return {'limit'} end
for i = 9, #ARGV, 3 do
  local name, cidr, size = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  if redis.call('HEXISTS', P .. ':kv:' .. BLOCK, name) == 0 then
    local allocations, unallocated = {}, {}
    for o = 1, size do allocations[o] = NULL; unallocated[o] = o - 1 end
    local b = { apiVersion = 'projectcalico.org/v3', kind = BLOCK, metadata = { name = name },
      spec = { cidr = cidr, affinity = 'host:' .. node, allocations = allocations, unallocated = unallocated,
               attributes = {}, strictAffinity = cfg.strictAffinity == true } }
    ds_put(BLOCK, name, cjson.encode(b))
    redis.call('SADD', aff, name)
    redis.call('HSET', P .. ':ipam:bp', name, pool_name)
    redis.call('HSET', P .. ':ipam:free', name, size)
    local r = assign_in(name, handle, attrs)
    return { 'ok', r[1], r[2], r[3] }
  end
end
return {'raced'}
`;

// ARGV 4.. : node, handle, attrs, block names...
export const BORROW = `
local node, handle, attrs = ARGV[4], ARGV[5], ARGV[6]
if ipam_config().strictAffinity == true then return {'strict'} end
for i = 7, #ARGV do
  if tonumber(redis.call('HGET', P .. ':ipam:free', ARGV[i]) or '0') > 0 then
    local r = assign_in(ARGV[i], handle, attrs)
    if r then return { 'ok', r[1], r[2], r[3] } end
  end
end
return {'none'}
`;

// ARGV 4 : handle
export const RELEASE = `
local handle = ARGV[4]
local _, hj = ds_get(HANDLE, handle)
if not hj then return {} end
local h = cjson.decode(hj)
local release_affine = ipam_config().releaseEmptyAffineBlocks ~= false
local out = {}
local blocks = h.spec.block
if type(blocks) ~= 'table' then blocks = {} end
for cidr, _ in pairs(blocks) do
  local name = block_name(cidr)
  local _, j = ds_get(BLOCK, name)
  if j then
    local b = cjson.decode(j)
    local s = b.spec
    if type(s.unallocated) ~= 'table' then s.unallocated = {} end
    if type(s.attributes) ~= 'table' then s.attributes = {} end
    local mine = {}
    for i, a in ipairs(s.attributes) do if a.handle_id == handle then mine[i - 1] = true end end
    for o = 1, #s.allocations do
      local a = s.allocations[o]
      if a ~= NULL and mine[a] then
        s.allocations[o] = NULL
        table.insert(s.unallocated, o - 1)
        table.insert(out, cidr)
        table.insert(out, o - 1)
      end
    end
    local used, attrs, map = {}, {}, {}
    for o = 1, #s.allocations do local a = s.allocations[o]; if a ~= NULL then used[a] = true end end
    for i, a in ipairs(s.attributes) do
      if used[i - 1] then table.insert(attrs, a); map[i - 1] = #attrs - 1 end
    end
    for o = 1, #s.allocations do local a = s.allocations[o]; if a ~= NULL then s.allocations[o] = map[a] end end
    s.attributes = attrs
    local affine = s.affinity ~= nil and s.affinity ~= NULL
    if #s.unallocated == #s.allocations and ((not affine) or release_affine) then
      ds_del(BLOCK, name)
      redis.call('HDEL', P .. ':ipam:free', name)
      redis.call('HDEL', P .. ':ipam:bp', name)
      if affine and string.sub(s.affinity, 1, 5) == 'host:' then
        redis.call('SREM', P .. ':ipam:aff:' .. string.sub(s.affinity, 6), name)
      end
    else
      ds_put(BLOCK, name, cjson.encode(b))
      redis.call('HSET', P .. ':ipam:free', name, #s.unallocated)
    end
  end
end
ds_del(HANDLE, handle)
return out
`;

// ARGV 4 : number of blocks, then (name, pool, json) per block, then (name, json) per handle.
// Used by podroute ipam repair: everything IPAM owns is replaced at once.
export const RESTORE = `
for _, name in ipairs(redis.call('HKEYS', P .. ':kv:' .. BLOCK)) do
  local _, j = ds_get(BLOCK, name)
  local aff = cjson.decode(j).spec.affinity
  if type(aff) == 'string' and string.sub(aff, 1, 5) == 'host:' then redis.call('DEL', P .. ':ipam:aff:' .. string.sub(aff, 6)) end
  ds_del(BLOCK, name)
end
for _, name in ipairs(redis.call('HKEYS', P .. ':kv:' .. HANDLE)) do ds_del(HANDLE, name) end
redis.call('DEL', P .. ':ipam:bp', P .. ':ipam:free')
local n = tonumber(ARGV[4])
local i = 5
for _ = 1, n do
  local name, pool, json = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  i = i + 3
  local s = cjson.decode(json).spec
  ds_put(BLOCK, name, json)
  redis.call('HSET', P .. ':ipam:bp', name, pool)
  redis.call('HSET', P .. ':ipam:free', name, #s.unallocated)
  if type(s.affinity) == 'string' and string.sub(s.affinity, 1, 5) == 'host:' then
    redis.call('SADD', P .. ':ipam:aff:' .. string.sub(s.affinity, 6), name)
  end
end
while i <= #ARGV do
  ds_put(HANDLE, ARGV[i], ARGV[i + 1])
  i = i + 2
end
return 'ok'
`;
