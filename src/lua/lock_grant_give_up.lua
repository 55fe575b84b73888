-- Lock, FencedLock and ReadWriteLock's write side in grant mode: a registered waiter gives
-- up (its wait ran out, or an error ended it). It leaves the registrations; a grant it was given meanwhile (its field is
-- in N although it never acquired) is released and passed on, never left to its short lease.
-- KEYS[1] lock hash N; KEYS[2] lock channel; KEYS[3] registrations; KEYS[4] grant channel prefix;
-- KEYS[5] (FencedLock only) token counter.
-- ARGV[1] the waiter's owner field (a writer's W); ARGV[2] publish command; ARGV[3] grant
-- lease (ms); ARGV[4] (read-write lock only, §5) the write release's message "1": the lock is
-- a read-write lock, its registrations "redisync_rwlock_grant:TAG(N)", its channel
-- "redisson_rwlock:TAG(N)", and a grant passed on is a write hold.
-- Returns 1 when it released a grant, else 0. Sent after grant_pass_on.lua.
local refused = grant_publish_refused(ARGV[2], KEYS[2], KEYS[4], KEYS[3])
if refused then
  return refused
end
redis.call('zrem', KEYS[3], ARGV[1])
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('del', KEYS[1])
  pass_on(KEYS[1], KEYS[3], KEYS[4], KEYS[2], KEYS[5], ARGV[3], ARGV[2], ARGV[4])
  return 1
end
return 0
