-- SPDX-License-Identifier: Apache-2.0
-- Permit-expirable semaphore: how long the server still holds one permit (issue 36 item 7;
-- sync/counters/permit_lease_watch.h). Read only: no reclaim, no publish, no preludes.
-- KEYS[1] the sorted set "TAG(N):timeout"; ARGV[1] the id (16 raw bytes).
-- Returns the ms left by the server's clock (> 0); -1 when it has no expiry; -2 when it is not
-- held, or its lease ended (score <= now) and only the next reclaim has not removed it yet.
local score = redis.call('zscore', KEYS[1], ARGV[1])
if score == false then
  return -2
end
score = tonumber(score)
if score == 922337203685477 then
  return -1
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if score <= now then
  return -2
end
return score - now
