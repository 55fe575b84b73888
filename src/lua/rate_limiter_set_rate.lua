-- SPDX-License-Identifier: Apache-2.0
-- Rate limiter set (docs/wire-format.md §17.2). KEYS[1] the configuration hash N; KEYS[2] the value key
-- and KEYS[3] the permits key of the new type for this client. ARGV as
-- rate_limiter_try_set_rate.lua. Overwrites the configuration and restarts the window.
redis.call('hset', KEYS[1], 'rate', ARGV[1], 'interval', ARGV[2], 'type', ARGV[3],
           'keepAliveTime', ARGV[4])
if tonumber(ARGV[4]) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[4])
else
  redis.call('persist', KEYS[1])  -- a keep-alive set before no longer applies
end
redis.call('del', KEYS[2], KEYS[3])
return 1
