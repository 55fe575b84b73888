-- Permit-expirable semaphore: release several permits, all or nothing (docs/wire-format.md §8).
-- KEYS[1] permits string N; KEYS[2] sorted set "TAG(N):timeout" (member = 16 raw id bytes,
-- score = expiry epoch ms or 922337203685477 = no expiry); KEYS[3] channel "redisson_sc:TAG(N)".
-- ARGV[1] now (client epoch ms); ARGV[2] publish command (PUBLISH or SPUBLISH).
-- ARGV[3 ..] the ids (16 raw bytes each, no duplicates).
-- When every id is held and unexpired: reclaim, remove the ids, add their number to N, publish
-- that number, return it. Otherwise no change. The spec returns 0 then; here the result is -k,
-- k = the 1-based position of the first unknown or expired id, so the caller can name it
-- (no effect on interoperability: only this client reads the result).
-- reclaim(now, limit) of docs/wire-format.md §8: expired permits (score <= now) go back to N; publish the
-- new count when it is > 0. limit nil = all.
local function reclaim(now, limit)
  local count
  if limit == nil then
    count = redis.call('zremrangebyscore', KEYS[2], '-inf', now)
  else
    local expired = redis.call('zrangebyscore', KEYS[2], '-inf', now, 'limit', 0, limit)
    count = #expired
    for i = 1, count do
      redis.call('zrem', KEYS[2], expired[i])
    end
  end
  if count > 0 then
    local value = redis.call('incrby', KEYS[1], count)
    if value > 0 then
      redis.call(ARGV[2], KEYS[3], value)
    end
  end
end

local now = tonumber(ARGV[1])
for i = 3, #ARGV do
  local score = redis.call('zscore', KEYS[2], ARGV[i])
  if score == false or tonumber(score) <= now then
    return -(i - 2)
  end
end
reclaim(ARGV[1], nil)
local removed = 0
for i = 3, #ARGV do
  removed = removed + redis.call('zrem', KEYS[2], ARGV[i])
end
redis.call('incrby', KEYS[1], removed)
redis.call(ARGV[2], KEYS[3], removed)
return removed
