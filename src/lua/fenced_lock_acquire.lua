-- SPDX-License-Identifier: Apache-2.0
-- Fenced lock acquire (docs/wire-format.md §11): the reentrant acquire of §2.2 that also increments the
-- fencing counter on every success, re-entry included.
-- KEYS[1] lock hash N; KEYS[2] counter "redisson_lock_token:TAG(N)".
-- ARGV[1] lease ms; ARGV[2] owner field O; ARGV[3] "1": acquire-with-token, "0": ordinary.
-- With token: returns {-1, token} when acquired, else {PTTL, -1}.
-- Ordinary: returns nil when acquired, else the PTTL.
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  local token = redis.call('incr', KEYS[2])
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then redis.call('pexpire', KEYS[1], ARGV[1]) end  -- never shortens (issue 22)
  if ARGV[3] == '1' then
    return {-1, token}
  end
  return nil
end
local ttl = redis.call('pttl', KEYS[1])
if ARGV[3] == '1' then
  return {ttl, -1}
end
return ttl
