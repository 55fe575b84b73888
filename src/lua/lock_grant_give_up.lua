-- SPDX-License-Identifier: Apache-2.0
--@requires grant_pass_on
-- Lock, FencedLock, NonReentrantLock and ReadWriteLock's write side in grant mode: a registered
-- waiter gives up (its wait ran out, it was cancelled, or an error ended it). It leaves the
-- registrations (its own registration only: another acquisition of the same owner keeps its
-- own); a grant made to it meanwhile (the grant mark names it: its field is in N although it
-- never acquired) is released and passed on, never left to its short lease. A hold of its
-- field that is not its grant (another acquisition's, or taken since) is left alone: a late
-- copy of this step changes nothing that is not its own.
-- KEYS[1] lock hash N; KEYS[2] lock channel; KEYS[3] registrations; KEYS[4] their ids; KEYS[5]
-- grant mark; KEYS[6] grant channel prefix; KEYS[7] FencedLock: token counter; read-write
-- lock: readers key "redisync_rwlock_readers:TAG(N)" (a grant given back goes to waiting
-- readers first, as in rwlock_write_release.lua).
-- ARGV[1] the waiter's owner field (a writer's W); ARGV[2] publish command; ARGV[3] grant
-- lease (ms); ARGV[4] the acquisition's grant id; ARGV[5] (read-write lock only, §5) the write
-- release's message "1": the lock is a read-write lock, its registrations
-- "redisync_rwlock_grant:TAG(N)", its channel "redisson_rwlock:TAG(N)", and a grant passed on
-- is a write hold.
-- Returns 1 when it released a grant, else 0. Sent after grant_pass_on.lua.
local rw = ARGV[5] ~= nil
local g = grant_keys(KEYS[3], KEYS[4], KEYS[5], KEYS[6], (not rw) and KEYS[7] or nil,
                     rw and KEYS[7] or nil)
local refused = grant_publish_refused(ARGV[2], KEYS[2], g)
if refused then
  return refused
end
grant_deregister(g, ARGV[1], ARGV[4])
if redis.call('hget', KEYS[1], ARGV[1]) == '1' and grant_marked(g, ARGV[1], ARGV[4]) then
  redis.call('del', KEYS[1])
  redis.call('del', g.mark)
  pass_on(KEYS[1], g, KEYS[2], ARGV[3], ARGV[2], ARGV[5])
  return 1
end
return 0
