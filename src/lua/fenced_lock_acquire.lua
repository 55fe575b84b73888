-- SPDX-License-Identifier: Apache-2.0
-- Fenced lock acquire (docs/wire-format.md §11): the reentrant acquire of §2.2 that also increments the
-- fencing counter on every success, re-entry included, with redisync's starvation guard as in
-- lock_acquire.lua (the same claim key: a FencedLock and a Lock of one name share the hash).
-- KEYS[1] lock hash N; KEYS[2] counter "redisson_lock_token:TAG(N)"; KEYS[3] (optional) guard
-- "redisync_lock_guard:TAG(N)".
-- ARGV[1] lease ms; ARGV[2] owner field O; ARGV[3] "1": acquire-with-token, "0": ordinary;
-- ARGV[4] "1": this waiter has waited too long, claim the next turn; ARGV[5] claim expiry ms.
-- With token: returns {-1, token} when acquired, else {PTTL, -1}.
-- Ordinary: returns nil when acquired, else the PTTL.
local function refused(ttl)
  if ARGV[3] == '1' then
    return {ttl, -1}
  end
  return ttl
end
local guard = false
if KEYS[3] then
  guard = redis.call('get', KEYS[3])
  if guard and guard ~= ARGV[2] and redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    local ttl = redis.call('pttl', KEYS[1])
    if ttl == -2 then
      ttl = redis.call('pttl', KEYS[3])  -- free but claimed: wait at most for the claim
    end
    return refused(ttl)
  end
end
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  local token = redis.call('incr', KEYS[2])
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then redis.call('pexpire', KEYS[1], ARGV[1]) end  -- never shortens (issue 22)
  if guard then
    redis.call('del', KEYS[3])
  end
  if ARGV[3] == '1' then
    return {-1, token}
  end
  return nil
end
if KEYS[3] and ARGV[4] == '1' then
  redis.call('set', KEYS[3], ARGV[2], 'px', ARGV[5])
end
return refused(redis.call('pttl', KEYS[1]))
