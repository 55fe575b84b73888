-- SPDX-License-Identifier: Apache-2.0
-- Reentrant lock acquire (docs/wire-format.md §2.2), with redisync's starvation guard.
-- KEYS[1] lock hash; KEYS[2] (optional) guard "redisync_lock_guard:TAG(N)";
-- ARGV[1] lease ms; ARGV[2] owner field "<client id>:<thread id>";
-- ARGV[3] "1": this waiter has waited too long, claim the next turn; ARGV[4] claim expiry ms.
-- Returns nil when acquired (or re-entered), else the PTTL of the lock (how long to wait at
-- most for a release message).
--
-- The guard: the plain lock is unfair, and a waiter can lose the race for a freed lock many
-- times in a row (to a holder that re-locks at once, or to waiters whose wake-up message
-- comes first: a PUBLISH reaches subscribers in subscription order). A waiter that has waited
-- longer than Config::starvation_guard claims the guard; redisync clients then leave a free
-- lock to it (re-entry excepted) until it takes the lock or its claim expires. Redisson
-- clients ignore the key, which only holds back redisync clients and never blocks a lock for
-- longer than the claim's expiry.
local guard = false
if KEYS[2] then
  guard = redis.call('get', KEYS[2])
  if guard and guard ~= ARGV[2] and redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    local ttl = redis.call('pttl', KEYS[1])
    if ttl == -2 then
      ttl = redis.call('pttl', KEYS[2])  -- free but claimed: wait at most for the claim
    end
    return ttl
  end
end
local fresh = redis.call('exists', KEYS[1]) == 0
if fresh or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  -- Never shortens (issue 22); a key this call created has no expiry to compare with.
  if fresh or redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then redis.call('pexpire', KEYS[1], ARGV[1]) end
  if guard then
    redis.call('del', KEYS[2])
  end
  return nil
end
if ARGV[3] == '1' then
  redis.call('set', KEYS[2], ARGV[2], 'px', ARGV[4])
end
return redis.call('pttl', KEYS[1])
