-- SPDX-License-Identifier: Apache-2.0
-- Read or write force release (docs/wire-format.md §5.6): delete the lock if it is in the given mode,
-- whoever holds it, and wake waiters.
-- KEYS[1] lock hash N; KEYS[2] channel "redisson_rwlock:TAG(N)";
-- ARGV[1] mode "read" or "write"; ARGV[2] message ("0" read, "1" write); ARGV[3] publish command.
-- Returns 1 if the lock was in that mode and is now deleted, else 0.
-- Checked before any write: a user without the right to publish would otherwise have the
-- write done and the script aborted at the publish, its waiters never woken.
if redis.acl_check_cmd and not redis.acl_check_cmd(ARGV[3], KEYS[2], ARGV[2]) then
  return redis.error_reply('NOPERM this user may not ' .. ARGV[3] .. ' to channel ' .. KEYS[2] ..
    ' (redisync wakes waiters with it; grant it with ACL SETUSER <user> &<channel pattern>);' ..
    ' nothing was changed')
end
if redis.call('hget', KEYS[1], 'mode') == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call(ARGV[3], KEYS[2], ARGV[2])
  return 1
end
return 0
