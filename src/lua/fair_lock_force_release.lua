-- Fair lock force release (docs/wire-format.md §4.7): delete the lock whoever holds it and wake the
-- head waiter.
-- KEYS[1] lock hash N; KEYS[2] queue; KEYS[3] timeout set; KEYS[4] channel prefix
-- "redisson_lock__channel:TAG(N)".
-- ARGV[1] message "0"; ARGV[2] unused (now is the server's TIME); ARGV[3] publish command.
-- Sent after fair_lock_dead_heads.lua (drop_dead_heads).
-- Returns 1 if the lock existed, else 0.
-- Checked before any write: a user without the right to publish would otherwise have the
-- write done and the script aborted at the publish, its waiters never woken.
if redis.acl_check_cmd and not redis.acl_check_cmd(ARGV[3], KEYS[4] .. ':' .. 'x', ARGV[1]) then
  return redis.error_reply('NOPERM this user may not ' .. ARGV[3] .. ' to channel ' .. KEYS[4] .. ':' .. 'x' ..
    ' (redisync wakes waiters with it; grant it with ACL SETUSER <user> &<channel pattern>);' ..
    ' nothing was changed')
end
local now = server_now()
drop_dead_heads(KEYS[2], KEYS[3], now)  -- §4.2 (fair_lock_dead_heads.lua)
if redis.call('del', KEYS[1]) == 1 then
  local head = redis.call('lindex', KEYS[2], 0)
  if head ~= false then
    redis.call(ARGV[3], KEYS[4] .. ':' .. head, ARGV[1])
  end
  return 1
end
return 0
