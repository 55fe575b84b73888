-- SPDX-License-Identifier: Apache-2.0
--@requires rate_limiter_window
-- Rate limiter acquire, one attempt (docs/wire-format.md §17.3). Sent after rate_limiter_window.lua.
-- KEYS as there. ARGV[1] permits p (1 .. 2^32-1); ARGV[2] a random 16-byte grant id.
-- Returns nil when acquired; otherwise the ms until the oldest grant leaves the window
-- (interval - (now - its score)), when a permit can free up.
local cfg, err = rl_config()
if cfg == nil then
  return err
end
local p = tonumber(ARGV[1])
if p > cfg.rate then
  return redis.error_reply('RATE_LIMITER_PERMITS_EXCEED_RATE ' .. string.format('%d', cfg.rate) ..
                           ' Requested permits amount could not exceed defined rate')
end
local now = rl_now()
local value, changed = rl_window(cfg, now)
if value == nil then
  return changed
end
if value < p then
  local oldest = redis.call('zrange', cfg.permits, 0, 0, 'withscores')
  if oldest[2] == nil then
    -- Nothing granted in the window yet too few permits: the value lost track (a release of
    -- more than was taken cannot do this, it is capped). Start the window over.
    value = cfg.rate
  else
    if changed then
      redis.call('set', cfg.value, value)
      rl_expire(cfg)
    end
    -- Redisson adds 3 ms of slack for its clients' clocks; grants here are scored with the
    -- server's own clock, so the oldest grant leaves the window exactly at score + interval.
    return math.max(1, cfg.interval - (now - tonumber(oldest[2])))
  end
end
redis.call('zadd', cfg.permits, now, struct.pack('Bc0I', string.len(ARGV[2]), ARGV[2], p))
redis.call('set', cfg.value, value - p)
rl_expire(cfg)
return nil
