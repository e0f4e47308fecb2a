//! The Lua scripts, one per operation: each runs as a single atomic step on the server.
//! Keys and arguments are listed at the top of each; [`RedisRegistry`](super::RedisRegistry)
//! says what the keys hold.

use std::sync::LazyLock;

use redis::Script;

const ACQUIRE: &str = r"
-- KEYS: hwm, sticky, expiry, cursor, layout, incarnation, reach. ARGV: worker key prefix,
-- identity, holder, workers, ttl ms, candidates, sweep, layout, reach ms, then the key
-- prefixes of earlier releases' namespaces. Returns {worker, hwm or nil, old namespaces
-- holding a mark, since, the fleet's reach}, {-1, the recorded layout, 0, 0, 0} when the
-- fleet's layout is another, {-2, the eviction policy, 0, 0, 0} when the server may evict
-- keys, or nil when all are held.
local prefix, identity, holder = ARGV[1], ARGV[2], ARGV[3]
local workers, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
-- A server that may evict keys may evict a lease or a mark: it cannot keep worker ids.
local memory = redis.call('INFO', 'memory')
local policy = string.match(memory, 'maxmemory_policy:([%w-]+)') or 'noeviction'
if tonumber(string.match(memory, 'maxmemory:(%d+)') or 0) > 0 and policy ~= 'noeviction' then
  return {-2, policy, 0, 0, 0}
end
local recorded = redis.call('GET', KEYS[5])
if not recorded then
  redis.call('SET', KEYS[5], ARGV[8])
elseif recorded ~= ARGV[8] then
  return {-1, recorded, 0, 0, 0}
end
local legacy = {}
for i = 10, #ARGV do legacy[#legacy + 1] = ARGV[i] end
-- The largest reach any server of the fleet recorded before it issued.
local reach = tonumber(redis.call('GET', KEYS[7])) or 0
if tonumber(ARGV[9]) > reach then
  reach = tonumber(ARGV[9])
  redis.call('SET', KEYS[7], ARGV[9])
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local function id(n) return string.format('%d', n) end
-- Since when this server vouches for what it holds. A restart (from any backup, or from
-- nothing) gives it a new run id; a promotion, a new replication id. Either way, what the
-- records say was written before that instant may be older than what holders last wrote.
-- A restart happened when the process started (see below for the rounding); a promotion,
-- at the latest now, when it is first seen.
local server, replication = redis.call('INFO', 'server'), redis.call('INFO', 'replication')
local incarnation = (string.match(server, 'run_id:(%w+)') or '') .. ':' ..
  (string.match(replication, 'master_replid:(%w+)') or '')
-- With no record at all (the first use of this server, or keys flushed or evicted by the
-- running server, which keeps its run id), it vouches from now on.
local since = tonumber(redis.call('HGET', KEYS[6], incarnation))
if not since then
  local replid2 = string.match(replication, 'master_replid2:(%w+)') or ''
  if redis.call('EXISTS', KEYS[6]) == 1 and string.match(replid2, '^0*$') then
    -- Uptime counts whole seconds between whole-second readings: it may be a second
    -- more than the time since the start, never less; a second added errs late.
    since = now - 1000 * tonumber(string.match(server, 'uptime_in_seconds:(%d+)') or 0) + 1000
  else
    since = now
  end
  redis.call('DEL', KEYS[6])
  redis.call('HSET', KEYS[6], incarnation, id(since))
end
-- Whether no server of an earlier release holds w under its own namespace.
local function left_free(w)
  for _, p in ipairs(legacy) do
    if redis.call('EXISTS', p .. 'w' .. id(w)) == 1 then return false end
  end
  return true
end
local function take(w)
  redis.call('SET', prefix .. id(w), holder, 'PX', ttl)
  redis.call('ZADD', KEYS[3], id(now + ttl), id(w))
  redis.call('HSET', KEYS[2], identity, id(w))
  -- The largest of the fleet's mark and those earlier releases left (a corrupt one is
  -- returned as it is, for the client to name).
  local mark = redis.call('HGET', KEYS[1], id(w))
  local holding = 0
  for _, p in ipairs(legacy) do
    local left = redis.call('HGET', p .. 'hwm', id(w))
    if left then
      holding = holding + 1
      local n = tonumber(left)
      if not n or not mark or not tonumber(mark) or n > tonumber(mark) then mark = left end
    end
  end
  return {w, mark, holding, since, reach}
end
local old = tonumber(redis.call('HGET', KEYS[2], identity))
if old and old >= 0 and old < workers then
  local current = redis.call('GET', prefix .. id(old))
  if (not current or current == holder) and left_free(old) then return take(old) end
end
local ended = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, ARGV[6])
for _, member in ipairs(ended) do
  local left = redis.call('PTTL', prefix .. member)
  if left == -2 then
    local w = tonumber(member)
    if w and w >= 0 and w < workers and left_free(w) then return take(w) end
  else
    -- Held although its entry says it ended (the server's clock jumped, or the key was
    -- written by hand): correct the entry so it stops coming first.
    redis.call('ZADD', KEYS[3], id(now + (left >= 0 and left or ttl)), member)
  end
end
local start = tonumber(redis.call('GET', KEYS[4])) or 0
if start >= workers then start = 0 end
local budget = math.min(workers, tonumber(ARGV[7]))
for i = 0, budget - 1 do
  local w = (start + i) % workers
  if redis.call('EXISTS', prefix .. id(w)) == 0 and left_free(w) then
    redis.call('SET', KEYS[4], id((w + 1) % workers))
    return take(w)
  end
end
redis.call('SET', KEYS[4], id((start + budget) % workers))
return nil
";

const RENEW: &str = r"
-- KEYS: the worker, hwm, expiry. ARGV: holder, worker, ttl ms, hwm.
-- Returns 1 when renewed, 0 when the lease is gone, 2 when another holder has it.
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
if current ~= ARGV[1] then return 2 end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[3], string.format('%d', now + tonumber(ARGV[3])), ARGV[2])
local mark = tonumber(redis.call('HGET', KEYS[2], ARGV[2]))
if not mark or mark < tonumber(ARGV[4]) then redis.call('HSET', KEYS[2], ARGV[2], ARGV[4]) end
return 1
";

const RELEASE: &str = r"
-- KEYS: the worker, hwm, expiry. ARGV: holder, worker, hwm.
-- Returns 1 when released, 0 when the lease was not held.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('DEL', KEYS[1])
redis.call('ZADD', KEYS[3], 0, ARGV[2])
return 1
";

/// The scripts, sent by hash (and loaded when the server lacks them): acquire, renew, release.
const LIST: &str = r"
-- ARGV: a SCAN cursor, a key pattern, how many keys to look at. Returns {next cursor, the
-- keys that match}: one bounded step of a listing, so that no call holds the server long;
-- {'-', why} when the user may not run SCAN (a script's own error would not say which
-- command was refused).
local step = redis.pcall('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', ARGV[3])
if step.err then return {'-', {step.err}} end
return step
";

pub(super) static SCRIPTS: LazyLock<[Script; 4]> =
    LazyLock::new(|| [ACQUIRE, RENEW, RELEASE, LIST].map(Script::new));
