-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check refused_or_recorded
-- Count-down latch: count down by n (docs/wire-format.md §9; the spec's step is n = 1).
-- KEYS[1] count string N; KEYS[2] channel; ARGV[1] n (>= 1); ARGV[2] publish command.
-- v = N - n (absent counts as 0). When v <= 0, N is deleted; when this call opened the latch
-- (the count went from > 0 to <= 0; for n = 1 exactly "v = 0"), "0" is published.
-- Sent with publish_check.lua and refused_or_recorded.lua in front: the right to publish is
-- checked before any write.
-- Returns v.
-- Optional (this library): KEYS[3] the call's record "redisync_latch_count_down:TAG(N):<request
-- id>", ARGV[3] its expiry (ms). A resent call finds the record and returns the v the first
-- copy stored there, changing nothing.
local done, reply = refused_or_recorded(ARGV[2], KEYS[2], KEYS[3])
if done then
  return reply
end
local n = tonumber(ARGV[1])
local v = redis.call('decrby', KEYS[1], n)
if v <= 0 then
  redis.call('del', KEYS[1])
  if v + n > 0 then
    redis.call(ARGV[2], KEYS[2], '0')
  end
end
if KEYS[3] then
  redis.call('set', KEYS[3], v, 'px', ARGV[3])
end
return v
