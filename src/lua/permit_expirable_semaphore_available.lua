-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check permit_expirable_semaphore_common
-- Permit-expirable semaphore: available permits after reclaiming expired ones
-- (docs/wire-format.md §8).
-- KEYS[1..3], ARGV[1..2]: see permit_expirable_semaphore_common.lua.
-- Returns N's value as stored (nil when absent): the client parses it strictly (Lua's
-- tonumber would read "12abc" as nil and "1e3" as 1000).
local _, refused = reclaim_all()
if refused then
  return refused
end
return redis.call('get', KEYS[1])
