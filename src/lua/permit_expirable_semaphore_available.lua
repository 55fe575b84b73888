-- Permit-expirable semaphore: available permits after reclaiming expired ones (docs/wire-format.md §8).
-- KEYS[1] permits string N; KEYS[2] sorted set "TAG(N):timeout" (member = 16 raw id bytes,
-- score = expiry epoch ms or 922337203685477 = no expiry); KEYS[3] channel "redisson_sc:TAG(N)".
-- ARGV[1] now (client epoch ms); ARGV[2] publish command (PUBLISH or SPUBLISH).
-- Returns the count (absent N -> 0).
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

reclaim(ARGV[1], nil)
return tonumber(redis.call('get', KEYS[1]) or '0')
