-- SPDX-License-Identifier: Apache-2.0
--@requires rate_limiter_window
-- Rate limiter available permits (docs/wire-format.md §17.4). Sent after rate_limiter_window.lua; KEYS as
-- there. Releases expired grants (step 3 of §17.3), then returns the permits available now
-- (no window yet = the rate). Nothing is written unless grants left the window.
local cfg, err = rl_config()
if cfg == nil then
  return err
end
local value, changed = rl_window(cfg, rl_now())
if value == nil then
  return changed
end
if changed and redis.call('exists', cfg.value) == 1 then
  redis.call('set', cfg.value, value)
  rl_expire(cfg)
end
return value
