-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check permit_expirable_semaphore_common
-- Permit-expirable semaphore: make the total (available + held) n (docs/wire-format.md §8).
-- KEYS[1..3], ARGV[1..2]: see permit_expirable_semaphore_common.lua.
-- ARGV[3] n (>= 0).
-- Absent N: set n, publish n. Else total = available + held; if it differs from n, add
-- (n - total) to the available count (may go negative) and publish n. Returns nothing.
-- Refused (COUNTLIMIT, nothing changed) when a count would leave the limit.
local n = tonumber(ARGV[3])
local value = redis.call('get', KEYS[1])
local held = redis.call('zcard', KEYS[2])
local refused
if value == false then
  refused = count_limit_refused(n, n + held)
else
  refused = count_limit_refused(n - held, n)  -- the available count is at least n - held
end
if refused == nil then
  refused = publish_refused(ARGV[2], KEYS[3])
end
if refused then
  return refused
end
reclaim(server_now(), nil)
if value == false then
  redis.call('set', KEYS[1], ARGV[3])
  redis.call(ARGV[2], KEYS[3], ARGV[3])
  return nil
end
local total = tonumber(value) + redis.call('zcard', KEYS[2])
if total ~= n then
  redis.call('incrby', KEYS[1], string.format('%d', n - total))
  redis.call(ARGV[2], KEYS[3], ARGV[3])
end
return nil
