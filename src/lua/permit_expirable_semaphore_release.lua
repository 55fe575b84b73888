-- Permit-expirable semaphore: release one permit by id (docs/wire-format.md §8).
-- KEYS[1] permits string N; KEYS[2] sorted set "TAG(N):timeout" (member = 16 raw id bytes,
-- score = expiry epoch ms or 922337203685477 = no expiry); KEYS[3] channel "redisson_sc:TAG(N)".
-- ARGV[1] now (client epoch ms); ARGV[2] publish command (PUBLISH or SPUBLISH).
-- ARGV[3] the id (16 raw bytes).
-- Returns 1 when the id was held and is released (the new count is published); 0 when the id
-- is unknown (no change) or had already expired (its permit goes back, as any expired one).
-- Every other expired permit is reclaimed as well.
-- reclaim(now, limit) of docs/wire-format.md §8: expired permits (score <= now) go back to N; publish the
-- new count when it is > 0. limit nil = all.
-- Checked before any write: a user without the right to publish would otherwise have the
-- write done and the script aborted at the publish, its waiters never woken.
if redis.acl_check_cmd and not redis.acl_check_cmd(ARGV[2], KEYS[3], '0') then
  return redis.error_reply('NOPERM this user may not ' .. ARGV[2] .. ' to channel ' .. KEYS[3] ..
    ' (redisync wakes waiters with it; grant it with ACL SETUSER <user> &<channel pattern>);' ..
    ' nothing was changed')
end
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

local score = redis.call('zscore', KEYS[2], ARGV[3])
if score == false then
  return 0
end
if tonumber(score) <= tonumber(ARGV[1]) then
  reclaim(ARGV[1], nil)
  return 0
end
reclaim(ARGV[1], nil)
redis.call('zrem', KEYS[2], ARGV[3])
local value = redis.call('incrby', KEYS[1], 1)
redis.call(ARGV[2], KEYS[3], value)
return 1
