-- SPDX-License-Identifier: Apache-2.0
-- Read lock acquire (docs/wire-format.md §5.2).
-- KEYS[1] lock hash N; KEYS[2] this reader's marker prefix "TAG(N):<reader field>:rwlock_timeout"
-- ARGV[1] lease ms; ARGV[2] reader field O "<client id>:<thread id>"; ARGV[3] the same thread's
-- writer field W "<client id>:<thread id>:write".
-- Returns nil when acquired (or re-entered), else the PTTL of the lock.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':1', 1)
  redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local k = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local marker = KEYS[2] .. ':' .. k
  redis.call('set', marker, 1)
  redis.call('pexpire', marker, ARGV[1])
  local remaining = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(remaining, tonumber(ARGV[1])))
  return nil
end
return redis.call('pttl', KEYS[1])
