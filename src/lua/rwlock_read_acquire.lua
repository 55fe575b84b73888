-- SPDX-License-Identifier: Apache-2.0
-- Read lock acquire (docs/wire-format.md §5.2).
-- KEYS[1] lock hash N; KEYS[2] this reader's marker prefix "TAG(N):<reader field>:rwlock_timeout"
-- ARGV[1] lease ms; ARGV[2] reader field O "<client id>:<thread id>"; ARGV[3] the same thread's
-- writer field W "<client id>:<thread id>:write".
-- Returns nil when acquired (or re-entered), else the PTTL of the lock.
-- Grant mode (redisync, "Direct handoff"): KEYS[3] readers key
-- "redisync_rwlock_readers:TAG(N)"; ARGV[4] its period in ms (the grant lease, or less when
-- the reader's wait ends sooner; "0": the reader will not wait, nothing is set). A refused
-- reader sets the key for that long: the release that frees the lock wakes the readers
-- instead of granting it to a registered writer, and writers leave the free lock to them
-- (rwlock_write_acquire.lua). The reply is then at most a third of the period, so a waiting
-- reader attempts, and renews the key, before it lapses; a reader that takes the lock ends it.
local readers = #KEYS == 3 and KEYS[3] or nil
local mode = redis.call('hget', KEYS[1], 'mode')
-- Another hold joins: the lock is read-held, or write-held by this thread (downgrade).
local joins = mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1)
if readers and (mode == false or joins) then
  redis.call('del', readers)
end
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':1', 1)
  redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if joins then
  local k = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local marker = KEYS[2] .. ':' .. k
  redis.call('set', marker, 1)
  redis.call('pexpire', marker, ARGV[1])
  local remaining = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(remaining, tonumber(ARGV[1])))
  return nil
end
local ttl = redis.call('pttl', KEYS[1])
local period = readers and tonumber(ARGV[4]) or 0
if period > 0 then
  redis.call('set', readers, 1, 'px', period)
  local poll = math.max(math.floor(period / 3), 1)
  if ttl < 0 or ttl > poll then
    ttl = poll
  end
end
return ttl
