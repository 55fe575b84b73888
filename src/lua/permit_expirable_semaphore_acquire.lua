-- Permit-expirable semaphore: take n permits with ids I1..In and deadline D (docs/wire-format.md §8).
-- KEYS[1] permits string N; KEYS[2] sorted set "TAG(N):timeout" (member = 16 raw id bytes,
-- score = expiry epoch ms or 922337203685477 = no expiry); KEYS[3] channel "redisson_sc:TAG(N)".
-- ARGV[1] now (client epoch ms); ARGV[2] publish command (PUBLISH or SPUBLISH).
-- ARGV[3] n (>= 1); ARGV[4] deadline score D; ARGV[5 .. 4+n] the ids (16 raw bytes each).
-- Returns "OK" when taken; ":<score>" when not enough permits and the lowest-scored member
-- expires at <score> (wait until then at most); nil otherwise (wait for a message).
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

local n = tonumber(ARGV[3])
reclaim(ARGV[1], n)
local value = tonumber(redis.call('get', KEYS[1]) or '0')
if value >= n then
  redis.call('decrby', KEYS[1], n)
  for i = 5, 4 + n do
    redis.call('zadd', KEYS[2], ARGV[4], ARGV[i])
  end
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', KEYS[2], ttl)
  end
  return 'OK'
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[2] ~= nil and tonumber(first[2]) ~= 922337203685477 then
  return ':' .. first[2]
end
return nil
