-- SPDX-License-Identifier: Apache-2.0
-- Counting semaphore: try to take n permits (docs/wire-format.md §7).
-- KEYS[1] permits string N; ARGV[1] n (>= 1).
-- Optional (this library, issue 22): KEYS[2] the acquisition's request record
-- "redisync_semaphore_request:TAG(N):<request id>", ARGV[2] its expiry (ms). A request that
-- took its permits leaves the record "1"; one that was cancelled finds "0" (see the settle
-- step in semaphore.cpp). Either way a resent or late request changes nothing.
-- Returns 1 when taken, 0 when N is absent or holds fewer than n permits (or was cancelled).
if KEYS[2] then
  local recorded = redis.call('get', KEYS[2])
  if recorded ~= false then
    return tonumber(recorded)
  end
end
local value = redis.call('get', KEYS[1])
if value ~= false and tonumber(value) >= tonumber(ARGV[1]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  if KEYS[2] then
    redis.call('set', KEYS[2], 1, 'px', ARGV[2])
  end
  return 1
end
return 0
