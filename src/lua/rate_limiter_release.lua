-- SPDX-License-Identifier: Apache-2.0
--@requires rate_limiter_window
-- Rate limiter release (docs/wire-format.md §17.4). Sent after rate_limiter_window.lua; KEYS as there.
-- ARGV[1] permits p (>= 1). Adds p back to the current window's value, never above the rate.
-- Returns the permits available afterwards.
local cfg, err = rl_config()
if cfg == nil then
  return err
end
local value = redis.call('get', cfg.value)
if value == false then
  return cfg.rate  -- no window: every permit is available already
end
value = tonumber(value)
if value == nil then
  return redis.error_reply('RATE_LIMITER_CORRUPT the value key does not hold a number')
end
value = math.min(cfg.rate, value + tonumber(ARGV[1]))
redis.call('set', cfg.value, value)
rl_expire(cfg)
return value
