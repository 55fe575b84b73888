-- Write lock release (docs/wire-format.md §5.5).
-- KEYS[1] lock hash N; KEYS[2] channel "redisson_rwlock:TAG(N)";
-- KEYS[3] release record "redisson_unlock_latch:TAG(N):R".
-- ARGV[1] message "1" (wake every waiter); ARGV[2] lease for the remaining holds (ms);
-- ARGV[3] writer field W; ARGV[4] release record expiry (ms); ARGV[5] publish command.
-- Returns nil: caller is not the writer; 0: still held (reentrant); 1: write hold released
-- (the lock is free, or still read-held by the same thread after a downgrade).
-- Every outcome is recorded in KEYS[3], nil as -1, as in lock_release.lua (Redisson records 1
-- for the absent lock and returns nil: a second copy must answer what the first did).
-- Checked before any write: a user without the right to publish would otherwise have the
-- write done and the script aborted at the publish, its waiters never woken.
if redis.acl_check_cmd and not redis.acl_check_cmd(ARGV[5], KEYS[2], ARGV[1]) then
  return redis.error_reply('NOPERM this user may not ' .. ARGV[5] .. ' to channel ' .. KEYS[2] ..
    ' (redisync wakes waiters with it; grant it with ACL SETUSER <user> &<channel pattern>);' ..
    ' nothing was changed')
end
local recorded = redis.call('get', KEYS[3])
if recorded ~= false then
  return tonumber(recorded)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call(ARGV[5], KEYS[2], ARGV[1])
  redis.call('set', KEYS[3], -1, 'px', ARGV[4])
  return nil
end
if mode == 'write' then
  if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    redis.call('set', KEYS[3], -1, 'px', ARGV[4])
    return nil
  end
  local count = redis.call('hincrby', KEYS[1], ARGV[3], -1)
  if count > 0 then
    if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then redis.call('pexpire', KEYS[1], ARGV[2]) end  -- never shortens (issue 22)
    redis.call('set', KEYS[3], 0, 'px', ARGV[4])
    return 0
  end
  redis.call('hdel', KEYS[1], ARGV[3])
  if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1])
    redis.call(ARGV[5], KEYS[2], ARGV[1])
  else
    -- The same thread still reads (downgrade): the lock stays, in read mode.
    redis.call('hset', KEYS[1], 'mode', 'read')
    -- Waiting readers can enter now (issue 22: they used to wait for their deadline).
    redis.call(ARGV[5], KEYS[2], ARGV[1])
  end
  redis.call('set', KEYS[3], 1, 'px', ARGV[4])
  return 1
end
redis.call('set', KEYS[3], -1, 'px', ARGV[4])
return nil
