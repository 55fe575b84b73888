-- SPDX-License-Identifier: Apache-2.0
-- Permit-expirable semaphore: add n permits, any sign (docs/wire-format.md §8).
-- KEYS[1..3], ARGV[1..2]: see permit_expirable_semaphore_common.lua.
-- ARGV[3] n. Reclaims expired permits, then sets N to value + n (absent = 0); publishes n only
-- when n > 0. Returns the new count.
local now = server_now()
local refused
if tonumber(ARGV[3]) > 0 then
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
