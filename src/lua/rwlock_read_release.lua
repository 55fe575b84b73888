-- SPDX-License-Identifier: Apache-2.0
--@requires release_record grant_pass_on
-- Read lock release (docs/wire-format.md §5.3).
-- KEYS[1] lock hash N; KEYS[2] channel "redisson_rwlock:TAG(N)";
-- KEYS[3] this reader's marker prefix "TAG(N):<reader field>:rwlock_timeout";
-- KEYS[4] the marker prefix TAG(N) (for every reader's markers);
-- KEYS[5] release record "redisson_unlock_latch:TAG(N):R".
-- ARGV[1] message "0"; ARGV[2] reader field O; ARGV[3] release record expiry (ms);
-- ARGV[4] publish command (PUBLISH or SPUBLISH); ARGV[5] "1": the caller's last read hold
-- (redisync counts them, and none is on its way), so its field and every marker of it go,
-- including holds of acquires whose replies it never read; "0": one hold.
-- Returns nil: caller is not a reader; 0: the lock is still held (by someone); 1: released.
-- Every outcome is recorded in KEYS[5], nil as -1, as in lock_release.lua (Redisson records 1
-- for the absent lock and returns nil: a second copy must answer what the first did).
-- Checked before any write: a user without the right to publish would otherwise have the
-- write done and the script aborted at the publish, its waiters never woken.
-- Grant mode (redisync, "Direct handoff"): KEYS[6] registrations
-- "redisync_rwlock_grant:TAG(N)"; KEYS[7] their ids "redisync_rwlock_grant_id:TAG(N)"; KEYS[8]
-- grant mark "redisync_grant_mark:TAG(N)"; KEYS[9] grant channel prefix
-- "redisync_grant__channel:TAG(N)"; KEYS[10] readers key "redisync_rwlock_readers:TAG(N)";
-- ARGV[6] grant lease (ms): the release of the last read hold grants the lock to the
-- registered writer with the earliest live deadline (as rwlock_write_release.lua) instead of
-- publishing ARGV[1]; with no live registration, or with readers waiting, it publishes as in
-- wake mode. Readers are never granted.
-- Sent after release_record.lua and grant_pass_on.lua (grant_publish_refused checks the lock
-- channel alone in wake mode).
local g = KEYS[6] and grant_keys(KEYS[6], KEYS[7], KEYS[8], KEYS[9], nil, KEYS[10]) or nil
local refused = grant_publish_refused(ARGV[4], KEYS[2], g)
local early, mode = rw_release_start(refused, KEYS[1], KEYS[2], ARGV[1], ARGV[4], KEYS[5], ARGV[3])
if early ~= false then
  return early
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return record_outcome(KEYS[5], nil, ARGV[3])
end
if ARGV[5] == '1' then
  for k = tonumber(redis.call('hget', KEYS[1], ARGV[2])), 1, -1 do
    redis.call('del', KEYS[3] .. ':' .. k)
  end
  redis.call('hdel', KEYS[1], ARGV[2])
else
  local count = redis.call('hincrby', KEYS[1], ARGV[2], -1)
  if count == 0 then
    redis.call('hdel', KEYS[1], ARGV[2])
  end
  redis.call('del', KEYS[3] .. ':' .. (count + 1))
end
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
    return record_outcome(KEYS[5], 0, ARGV[3])
  end
  if mode == 'write' then
    return record_outcome(KEYS[5], 0, ARGV[3])
  end
end
redis.call('del', KEYS[1])
if g then  -- grant mode
  pass_on(KEYS[1], g, KEYS[2], ARGV[6], ARGV[4], ARGV[1])
else
  redis.call(ARGV[4], KEYS[2], ARGV[1])
end
return record_outcome(KEYS[5], 1, ARGV[3])
