-- SPDX-License-Identifier: Apache-2.0
-- Permit-expirable semaphore shared sub-steps (docs/wire-format.md §8). Not a script on its
-- own: every permit-expirable semaphore script is sent with publish_check.lua and this text in
-- front (sync/permit_expirable_semaphore.cpp).
-- KEYS of every script: [1] permits string N; [2] sorted set "TAG(N):timeout" (member = 16 raw
-- id bytes, score = expiry epoch ms or 922337203685477 = no expiry); [3] channel
-- "redisson_sc:TAG(N)". ARGV of every script: [1] unused (it was the client's clock; the slot
-- is kept so the layout is stable); [2] publish command (PUBLISH or SPUBLISH).
local NO_EXPIRY = 922337203685477

-- The server's clock in epoch ms. Expiry scores are absolute wall-clock times shared with Java
-- clients (which score with their own clocks, as Redisson does); reading the server's TIME
-- gives every redisync client one clock, whatever its own clock says.
local function server_now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A score as Redis arguments want it: whole digits (Lua would print 922337203685477 as
-- 9.2233720368548e+14).
local function score_text(score)
  return string.format('%d', score)
end

-- The deadline score of a lease given in ms ("-1": no expiry), counted from `now`.
local function deadline_of(now, lease)
  local ms = tonumber(lease)
  if ms < 0 then
    return NO_EXPIRY
  end
  return now + ms
end

-- reclaim(now, limit) of docs/wire-format.md §8: expired permits (score <= now) go back to N;
-- publish the new count when it is > 0. limit nil = all.
local function reclaim(now, limit)
  local count
  if limit == nil then
    count = redis.call('zremrangebyscore', KEYS[2], '-inf', score_text(now))
  else
    local expired = redis.call('zrangebyscore', KEYS[2], '-inf', score_text(now), 'limit', 0,
      limit)
    count = #expired
    for i = 1, count do
      redis.call('zrem', KEYS[2], expired[i])
    end
  end
  if count > 0 then
    local value = redis.call('incrby', KEYS[1], count)
    if value > 0 then
      redis.call(ARGV[2], KEYS[3], value)
    end
  end
end

-- Before a step's first write when its only publish is reclaim's: the error reply to return
-- when there is an expired permit to reclaim and the user may not publish; else nil.
local function reclaim_refused(now)
  if redis.call('zcount', KEYS[2], '-inf', score_text(now)) == 0 then
    return nil
  end
  return publish_refused(ARGV[2], KEYS[3])
end

-- The start of a step that reads after reclaiming every expired permit: the server's now
-- after the reclaim, or nil and the error reply to return (reclaim_refused).
local function reclaim_all()
  local now = server_now()
  local refused = reclaim_refused(now)
  if refused then
    return nil, refused
  end
  reclaim(now, nil)
  return now
end

-- N must hold a count before any step reads it with tonumber or writes (issue 17, review):
-- Lua's tonumber takes "0x10", " 5" and "1e3", which Redis's INCRBY then refuses, after a
-- reclaim had already removed expired permits (a partial write). A count here is what INCRBY
-- takes and Lua holds exactly: "0", or an optional '-' and at most 15 digits without a
-- leading zero (sync/counts.h reads the counts the client gets back as strictly). Absent = 0.
-- The error reply names the value; nothing is changed.
local function count_refused()
  local value = redis.call('get', KEYS[1])
  if value == false or value == '0' then
    return nil
  end
  local digits = string.match(value, '^%-?([1-9]%d*)$')
  if digits ~= nil and #digits <= 15 then
    return nil
  end
  return redis.error_reply("ERR permit-expirable semaphore count '" .. KEYS[1] .. "' holds '" ..
    string.sub(value, 1, 64) .. "', not a count (a whole decimal integer of at most 15" ..
    ' digits); nothing was changed')
end
-- The largest count, available or in total (available + held), the semaphore keeps: what
-- count_refused() takes, 15 digits (issue 36 item 6). The client refuses a larger count it is
-- given (PermitExpirableSemaphore::kMaxCount); a step that sets or adds to the count refuses,
-- before any write, a result beyond it (count_limit_refused). Before this limit a count of 16
-- digits was accepted and written, and every later step then refused the semaphore.
local MAX_COUNT = 999999999999999

-- The error reply (code COUNTLIMIT, which the client raises as InvalidArgument) when the
-- available count `available` or the total `total` a step would leave lies beyond
-- +-MAX_COUNT; else nil.
local function count_limit_refused(available, total)
  if math.abs(available) <= MAX_COUNT and math.abs(total) <= MAX_COUNT then
    return nil
  end
  return redis.error_reply("COUNTLIMIT permit-expirable semaphore '" .. KEYS[1] ..
    "' would hold " .. score_text(available) .. ' available permits, ' .. score_text(total) ..
    ' in total, beyond the limit of ' .. score_text(MAX_COUNT) .. '; nothing was changed')
end

do
  local refused = count_refused()
  if refused then
    return refused
  end
end
