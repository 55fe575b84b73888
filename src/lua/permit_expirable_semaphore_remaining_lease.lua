-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check permit_expirable_semaphore_common
-- Permit-expirable semaphore: remaining lease of a held permit (docs/wire-format.md §8).
-- KEYS[1..3], ARGV[1..2]: see permit_expirable_semaphore_common.lua.
-- ARGV[3] the id (16 raw bytes).
-- Returns 0 when the id is not held (after reclaiming), -1 when it has no expiry, else
-- score - now (>= 1, since expired ids were just reclaimed), by the server's clock.
local now, refused = reclaim_all()
if refused then
  return refused
end
local score = redis.call('zscore', KEYS[2], ARGV[3])
if score == false then
  return 0
end
if tonumber(score) == NO_EXPIRY then
  return -1
end
return tonumber(score) - now
