-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check permit_expirable_semaphore_common set_count_if_absent
-- Permit-expirable semaphore: initialise the count only when N is absent (docs/wire-format.md §8).
-- KEYS[1..3], ARGV[1..2]: see permit_expirable_semaphore_common.lua.
-- ARGV[3] n (>= 0). Returns 1 when set (n is published), 0 when N exists.
-- Sent with set_count_if_absent.lua in front as well.
if redis.call('exists', KEYS[1]) == 0 then
  local n = tonumber(ARGV[3])
  local refused = count_limit_refused(n, n + redis.call('zcard', KEYS[2]))
  if refused then
    return refused  -- COUNTLIMIT: nothing changed
  end
end
return set_count_if_absent(ARGV[2], KEYS[1], ARGV[3], KEYS[3], ARGV[3])
