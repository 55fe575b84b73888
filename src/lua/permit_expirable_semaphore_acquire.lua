-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check permit_expirable_semaphore_common
-- Permit-expirable semaphore: take n permits, all with one deadline (docs/wire-format.md §8).
-- KEYS[1..3], ARGV[1..2]: see permit_expirable_semaphore_common.lua.
-- KEYS[4] the acquisition's request record "redisync_permit_request:TAG(N):<request id>"
-- (this library, issue 23): a request that took its permits leaves it "1"; one that was
-- cancelled finds "0" (see the settle step in permit_expirable_semaphore.cpp). Either way a
-- resent or late copy of the request changes nothing.
-- ARGV[3] n (>= 1); ARGV[4] the lease in ms, "-1" = no expiry (the deadline is counted from
-- the server's clock); ARGV[5 .. 4+n] the ids (16 raw bytes each); ARGV[5+n] the record's
-- expiry (ms).
-- Returns "OK" when taken (now or by an earlier copy); ":<ms>" when not enough permits and
-- the lowest-scored member expires in <ms> (wait that long at most); nil otherwise (wait for a
-- message, or the request was cancelled).
-- A user who may take permits but not publish would have its release refused (that release
-- publishes): refused here, before anything is written (issue 17 item 4).
local refused = publish_refused(ARGV[2], KEYS[3])
if refused then
  return refused
end
local recorded = redis.call('get', KEYS[4])
if recorded == '1' then
  return 'OK'
elseif recorded ~= false then
  return nil
end
local now = server_now()
local n = tonumber(ARGV[3])
reclaim(now, n)
local value = tonumber(redis.call('get', KEYS[1]) or '0')
if value >= n then
  redis.call('decrby', KEYS[1], n)
  local deadline = score_text(deadline_of(now, ARGV[4]))
  for i = 5, 4 + n do
    redis.call('zadd', KEYS[2], deadline, ARGV[i])
  end
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', KEYS[2], ttl)
  end
  redis.call('set', KEYS[4], '1', 'px', ARGV[5 + n])
  return 'OK'
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[2] ~= nil and tonumber(first[2]) ~= NO_EXPIRY then
  return ':' .. score_text(math.max(tonumber(first[2]) - now, 1))
end
return nil
