-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check permit_expirable_semaphore_common
-- Permit-expirable semaphore: release one permit by id (docs/wire-format.md §8).
-- KEYS[1..3], ARGV[1..2]: see permit_expirable_semaphore_common.lua.
-- ARGV[3] the id (16 raw bytes).
-- Returns 1 when the id was held and is released (the new count is published); 0 when the id
-- is unknown (no change) or had already expired (its permit goes back, as any expired one).
-- Every other expired permit is reclaimed as well.
local refused = publish_refused(ARGV[2], KEYS[3])
if refused then
  return refused
end
local now = server_now()
local score = redis.call('zscore', KEYS[2], ARGV[3])
if score == false then
  return 0
end
reclaim(now, nil)
if tonumber(score) <= now then
  return 0
end
redis.call('zrem', KEYS[2], ARGV[3])
local value = redis.call('incrby', KEYS[1], 1)
redis.call(ARGV[2], KEYS[3], value)
return 1
