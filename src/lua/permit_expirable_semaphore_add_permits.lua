-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check permit_expirable_semaphore_common
-- Permit-expirable semaphore: add n permits, any sign (docs/wire-format.md §8).
-- KEYS[1..3], ARGV[1..2]: see permit_expirable_semaphore_common.lua.
-- ARGV[3] n. Reclaims expired permits, then sets N to value + n (absent = 0); publishes n only
-- when n > 0. Returns the new count. Refused (COUNTLIMIT, nothing changed) when the available
-- count or the total would leave the limit (count_limit_refused).
local now = server_now()
local n = tonumber(ARGV[3])
local available = tonumber(redis.call('get', KEYS[1]) or '0')
-- The reclaim moves expired permits from held to available: the total stays, and the
-- available count only grows (up to the total).
local refused = count_limit_refused(available + n, available + redis.call('zcard', KEYS[2]) + n)
if refused then
  return refused
end
if n > 0 then
  refused = publish_refused(ARGV[2], KEYS[3])
else
  refused = reclaim_refused(now)
end
if refused then
  return refused
end
reclaim(now, nil)
local value = redis.call('incrby', KEYS[1], ARGV[3])
if tonumber(ARGV[3]) > 0 then
  redis.call(ARGV[2], KEYS[3], ARGV[3])
end
return value
