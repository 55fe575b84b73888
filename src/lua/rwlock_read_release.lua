-- Read lock release (docs/wire-format.md §5.3).
-- KEYS[1] lock hash N; KEYS[2] channel "redisson_rwlock:TAG(N)";
-- KEYS[3] this reader's marker prefix "TAG(N):<reader field>:rwlock_timeout";
-- KEYS[4] the marker prefix TAG(N) (for every reader's markers);
-- KEYS[5] release record "redisson_unlock_latch:TAG(N):R".
-- ARGV[1] message "0"; ARGV[2] reader field O; ARGV[3] release record expiry (ms);
-- ARGV[4] publish command (PUBLISH or SPUBLISH).
-- Returns nil: caller is not a reader; 0: the lock is still held (by someone); 1: released.
-- Every outcome is recorded in KEYS[5], nil as -1, as in lock_release.lua (Redisson records 1
-- for the absent lock and returns nil: a second copy must answer what the first did).
-- Checked before any write: a user without the right to publish would otherwise have the
-- write done and the script aborted at the publish, its waiters never woken.
if redis.acl_check_cmd and not redis.acl_check_cmd(ARGV[4], KEYS[2], ARGV[1]) then
  return redis.error_reply('NOPERM this user may not ' .. ARGV[4] .. ' to channel ' .. KEYS[2] ..
    ' (redisync wakes waiters with it; grant it with ACL SETUSER <user> &<channel pattern>);' ..
    ' nothing was changed')
end
local recorded = redis.call('get', KEYS[5])
if recorded ~= false then
  return tonumber(recorded)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  redis.call('set', KEYS[5], -1, 'px', ARGV[3])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  redis.call('set', KEYS[5], -1, 'px', ARGV[3])
  return nil
end
local count = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if count == 0 then
  redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (count + 1))
if redis.call('hlen', KEYS[1]) > 1 then
  -- The lock lives as long as the longest-lived marker of any reader (dead readers' markers
  -- have expired and no longer count).
  local longest = -3
  for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
    local holds = tonumber(redis.call('hget', KEYS[1], field))
    if holds ~= nil then
      for k = holds, 1, -1 do
        local ttl = redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. k)
        longest = math.max(ttl, longest)
      end
    end
  end
  if longest > 0 then
    -- In write mode the hash also carries the writer's lease (no marker): never shorten it.
    if mode ~= 'write' or redis.call('pttl', KEYS[1]) < longest then
      redis.call('pexpire', KEYS[1], longest)
    end
    redis.call('set', KEYS[5], 0, 'px', ARGV[3])
    return 0
  end
  if mode == 'write' then
    redis.call('set', KEYS[5], 0, 'px', ARGV[3])
    return 0
  end
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[3])
return 1
