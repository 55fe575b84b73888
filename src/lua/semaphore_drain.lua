-- SPDX-License-Identifier: Apache-2.0
-- Counting semaphore: take every available permit (docs/wire-format.md §7).
-- KEYS[1] permits string N.
-- Returns the previous count (absent -> 0, nothing created; may be negative) and sets N to 0.
local value = redis.call('get', KEYS[1])
if value == false then
  return 0
end
redis.call('set', KEYS[1], 0)
return tonumber(value)
