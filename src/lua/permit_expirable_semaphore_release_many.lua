-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check permit_expirable_semaphore_common
-- Permit-expirable semaphore: release several permits, all or nothing (docs/wire-format.md §8).
-- KEYS[1..3], ARGV[1..2]: see permit_expirable_semaphore_common.lua.
-- ARGV[3 ..] the ids (16 raw bytes each, no duplicates).
-- When every id is held and unexpired: reclaim, remove the ids, add their number to N, publish
-- that number, return it. Otherwise no change. The spec returns 0 then; here the result is -k,
-- k = the 1-based position of the first unknown or expired id, so the caller can name it
-- (no effect on interoperability: only this client reads the result).
local refused = publish_refused(ARGV[2], KEYS[3])
if refused then
  return refused
end
local now = server_now()
for i = 3, #ARGV do
  local score = redis.call('zscore', KEYS[2], ARGV[i])
  if score == false or tonumber(score) <= now then
    return -(i - 2)
  end
end
reclaim(now, nil)
local removed = 0
for i = 3, #ARGV do
  removed = removed + redis.call('zrem', KEYS[2], ARGV[i])
end
redis.call('incrby', KEYS[1], removed)
redis.call(ARGV[2], KEYS[3], removed)
return removed
