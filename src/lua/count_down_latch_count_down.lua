-- Count-down latch: count down by n (docs/wire-format.md §9; the spec's step is n = 1).
-- KEYS[1] count string N; KEYS[2] channel; ARGV[1] n (>= 1); ARGV[2] publish command.
-- v = N - n (absent counts as 0). When v <= 0, N is deleted; when this call opened the latch
-- (the count went from > 0 to <= 0; for n = 1 exactly "v = 0"), "0" is published.
-- Returns v.
-- Checked before any write: a user without the right to publish would otherwise have the
-- write done and the script aborted at the publish, its waiters never woken.
if redis.acl_check_cmd and not redis.acl_check_cmd(ARGV[2], KEYS[2], '0') then
  return redis.error_reply('NOPERM this user may not ' .. ARGV[2] .. ' to channel ' .. KEYS[2] ..
    ' (redisync wakes waiters with it; grant it with ACL SETUSER <user> &<channel pattern>);' ..
    ' nothing was changed')
end
local n = tonumber(ARGV[1])
local v = redis.call('decrby', KEYS[1], n)
if v <= 0 then
  redis.call('del', KEYS[1])
  if v + n > 0 then
    redis.call(ARGV[2], KEYS[2], '0')
  end
end
return v
