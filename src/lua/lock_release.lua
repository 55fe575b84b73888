-- Reentrant lock release (docs/wire-format.md §2.3).
-- KEYS[1] lock hash; KEYS[2] channel; KEYS[3] release record "redisson_unlock_latch:{N}:R"
-- ARGV[1] message "0"; ARGV[2] lease for the remaining holds (ms); ARGV[3] owner field;
-- ARGV[4] release record expiry (ms); ARGV[5] publish command (PUBLISH or SPUBLISH);
-- ARGV[6] "1" to publish on release, "0" not to (spin lock).
-- Returns nil: caller is not the owner; 0: still held (reentrant); 1: released.
-- Every outcome is recorded in KEYS[3], "not the owner" as -1 (docs/wire-format.md §1.8): a
-- second copy of this call (a resend, or a first copy arriving late) returns the recorded
-- outcome, -1 for nil, and changes nothing.
-- Checked before any write: a user without the right to publish would otherwise have the
-- write done and the script aborted at the publish, its waiters never woken.
if ARGV[6] == '1' and redis.acl_check_cmd and not redis.acl_check_cmd(ARGV[5], KEYS[2], ARGV[1]) then
  return redis.error_reply('NOPERM this user may not ' .. ARGV[5] .. ' to channel ' .. KEYS[2] ..
    ' (redisync wakes waiters with it; grant it with ACL SETUSER <user> &<channel pattern>);' ..
    ' nothing was changed')
end
local recorded = redis.call('get', KEYS[3])
if recorded ~= false then
  return tonumber(recorded)
end
-- One HGET instead of HEXISTS + HINCRBY on the common path (the last hold): a count of 1
-- would reach 0, and the hash is deleted then anyway.
local held = redis.call('hget', KEYS[1], ARGV[3])
if held == false then
  redis.call('set', KEYS[3], -1, 'px', ARGV[4])
  return nil
end
if tonumber(held) > 1 then
  redis.call('hincrby', KEYS[1], ARGV[3], -1)
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then redis.call('pexpire', KEYS[1], ARGV[2]) end  -- never shortens (issue 22)
  redis.call('set', KEYS[3], 0, 'px', ARGV[4])
  return 0
end
redis.call('del', KEYS[1])
if ARGV[6] == '1' then
  redis.call(ARGV[5], KEYS[2], ARGV[1])
end
redis.call('set', KEYS[3], 1, 'px', ARGV[4])
return 1
