-- SPDX-License-Identifier: Apache-2.0
--@requires release_record grant_pass_on
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
-- Grant mode (redisync, "Direct handoff"): KEYS[4] registrations
-- "redisync_rwlock_grant:TAG(N)"; KEYS[5] their ids "redisync_rwlock_grant_id:TAG(N)"; KEYS[6]
-- grant mark "redisync_grant_mark:TAG(N)"; KEYS[7] grant channel prefix
-- "redisync_grant__channel:TAG(N)"; KEYS[8] readers key "redisync_rwlock_readers:TAG(N)";
-- ARGV[6] grant lease (ms): a release that frees the lock grants it to the registered writer
-- with the earliest live deadline (a write hold with the short grant lease, announced on its
-- client's grant channel) instead of publishing ARGV[1]; with no live registration, or with
-- readers waiting (KEYS[8] exists), it publishes as in wake mode. A downgrade (the lock stays
-- read-held) never grants.
-- Sent after release_record.lua and grant_pass_on.lua (grant_publish_refused checks the lock
-- channel alone in wake mode).
local g = KEYS[4] and grant_keys(KEYS[4], KEYS[5], KEYS[6], KEYS[7], nil, KEYS[8]) or nil
local refused = grant_publish_refused(ARGV[5], KEYS[2], g)
local early = rw_release_start(refused, KEYS[1], KEYS[2], ARGV[1], ARGV[5], KEYS[3], ARGV[4],
                               'write')
if early ~= false then
  return early
end
local reply = drop_hold(KEYS[1], ARGV[3], ARGV[2], KEYS[3], ARGV[4])
if reply == 0 and g then
  grant_unmark(g, ARGV[3])  -- a hold re-entered since its grant: no longer just the grant
end
if reply ~= false then
  return reply
end
redis.call('hdel', KEYS[1], ARGV[3])
if g then
  grant_unmark(g, ARGV[3])  -- a grant released before its extension: its mark ends with it
end
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
  if g then  -- grant mode
    pass_on(KEYS[1], g, KEYS[2], ARGV[6], ARGV[5], ARGV[1])
    return record_outcome(KEYS[3], 1, ARGV[4])
  end
else
  -- The same thread still reads (downgrade): the lock stays, in read mode.
  redis.call('hset', KEYS[1], 'mode', 'read')
end
-- Wakes every waiter (after a downgrade, waiting readers can enter now: issue 22, they used
-- to wait for their deadline).
redis.call(ARGV[5], KEYS[2], ARGV[1])
return record_outcome(KEYS[3], 1, ARGV[4])
