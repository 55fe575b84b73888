-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check refused_or_recorded
-- Counting semaphore: release n permits, or add n (any sign; the count may go negative)
-- (docs/wire-format.md §7). Anybody may release.
-- KEYS[1] permits string N; KEYS[2] channel "redisson_sc:TAG(N)";
-- ARGV[1] n (release: >= 1; add: any sign); ARGV[2] publish command (PUBLISH or SPUBLISH).
-- Sent with publish_check.lua and refused_or_recorded.lua in front: the right to publish is
-- checked before any write.
-- Creates N when absent; publishes the new available count. Returns the new count.
-- Optional (this library): KEYS[3] the call's release record
-- "redisync_semaphore_release:TAG(N):<request id>", ARGV[3] its expiry (ms). A resent call finds
-- the record and returns the count the first copy stored there, changing nothing.
local done, reply = refused_or_recorded(ARGV[2], KEYS[2], KEYS[3])
if done then
  return reply
end
local value = redis.call('incrby', KEYS[1], ARGV[1])
-- Counts stay within +-(2^53 - 1), where Lua's doubles are exact (issue 22).
if value > 9007199254740991 or value < -9007199254740991 then
  redis.call('decrby', KEYS[1], ARGV[1])
  return redis.error_reply('ERR redisync: the permit count would leave [-(2^53 - 1), 2^53 - 1]')
end
redis.call(ARGV[2], KEYS[2], value)
if KEYS[3] then
  redis.call('set', KEYS[3], value, 'px', ARGV[3])
end
return value
