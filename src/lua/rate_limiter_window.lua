-- SPDX-License-Identifier: Apache-2.0
-- Rate limiter shared sub-steps (docs/wire-format.md §17). Not a script on its own: the rate limiter's
-- acquire, release and available scripts are sent with this text in front.
-- Every rate limiter script gets the same keys:
--   KEYS[1] the configuration hash N; KEYS[2] value S(N,"value"); KEYS[3] S(N,"value"):<client>;
--   KEYS[4] permits S(N,"permits"); KEYS[5] S(N,"permits"):<client>.
-- Errors are replies whose first word the client maps to an exception:
--   RATE_LIMITER_NOT_INITIALIZED, RATE_LIMITER_CORRUPT, RATE_LIMITER_PERMITS_EXCEED_RATE <rate>.
-- Every read comes before the first write, so a key of the wrong type fails the script
-- (WRONGTYPE) before it changed anything.

-- The server's wall clock in epoch ms. The spec has the client pass its own clock; the server's
-- is the same wall clock on a synchronised fleet, and it orders grants exactly as the server
-- runs them (effects replication: Redis >= 5 replicates the writes, not the script).
local function rl_now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The configuration: {rate, interval, type, keep} or nil and the error reply to return.
local function rl_config()
  local c = redis.call('hmget', KEYS[1], 'rate', 'interval', 'type', 'keepAliveTime')
  if c[1] == false or c[2] == false or c[3] == false then
    return nil, redis.error_reply('RATE_LIMITER_NOT_INITIALIZED RateLimiter is not initialized')
  end
  local cfg = {rate = tonumber(c[1]), interval = tonumber(c[2]), type = tonumber(c[3]),
               keep = tonumber(c[4] or '0'), keep_text = c[4] or '0'}
  if cfg.rate == nil or cfg.interval == nil or cfg.keep == nil or cfg.rate <= 0 or
      cfg.interval <= 0 or (cfg.type ~= 0 and cfg.type ~= 1) or
      not string.match(cfg.keep_text, '^%d+$') then
    return nil, redis.error_reply('RATE_LIMITER_CORRUPT rate, interval, type or keepAliveTime ' ..
                                  'of the configuration hash is not a valid number')
  end
  if cfg.type == 1 then
    cfg.value, cfg.permits = KEYS[3], KEYS[5]
  else
    cfg.value, cfg.permits = KEYS[2], KEYS[4]
  end
  return cfg
end

local function rl_sum(members)
  local sum = 0
  for _, m in ipairs(members) do
    local _, p = struct.unpack('Bc0I', m)
    sum = sum + p
  end
  return sum
end

-- Step 3 of §17.3 at time `now`: gives the permits of grants older than the window back.
-- Returns the permits available now and whether the value key must be written.
local function rl_window(cfg, now)
  local value = redis.call('get', cfg.value)
  local edge = now - cfg.interval
  local expired = redis.call('zrangebyscore', cfg.permits, '-inf', edge)
  if value == false then
    -- No window yet (or its value key is gone): all permits minus live grants, if any.
    if #expired > 0 then
      redis.call('zremrangebyscore', cfg.permits, '-inf', edge)
    end
    local live = redis.call('zrange', cfg.permits, 0, -1)
    return cfg.rate - rl_sum(live), true
  end
  value = tonumber(value)
  if value == nil then
    return nil, redis.error_reply('RATE_LIMITER_CORRUPT the value key does not hold a number')
  end
  local changed = false
  if #expired > 0 then
    redis.call('zremrangebyscore', cfg.permits, '-inf', edge)
    value = value + rl_sum(expired)
    changed = true
  end
  -- The cap of step 3, on whatever was read too: Redisson's availablePermits adds expired
  -- grants back without it, so a stored value can exceed the rate; taken as it is, a window
  -- granted up to twice the rate (issue 36 item 7). The live grants' sum is read only then.
  if value > cfg.rate then
    value = cfg.rate - rl_sum(redis.call('zrange', cfg.permits, 0, -1))
    changed = true
  end
  return value, changed
end

-- Step 5 of §17.3: the keep-alive, or else the hash's own remaining TTL, on the window keys.
local function rl_expire(cfg)
  if cfg.keep > 0 then
    -- The stored text, not the number: Lua would print a large number in exponent form.
    redis.call('pexpire', KEYS[1], cfg.keep_text)
    redis.call('pexpire', cfg.value, cfg.keep_text)
    redis.call('pexpire', cfg.permits, cfg.keep_text)
    return
  end
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', cfg.value, ttl)
    redis.call('pexpire', cfg.permits, ttl)
  end
end
