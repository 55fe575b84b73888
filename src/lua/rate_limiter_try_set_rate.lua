-- SPDX-License-Identifier: Apache-2.0
-- Rate limiter try-set (docs/wire-format.md §17.2). KEYS[1] the configuration hash N.
-- ARGV[1] rate; ARGV[2] interval ms; ARGV[3] type (0 OVERALL, 1 PER_CLIENT); ARGV[4] keep-alive
-- ms (0 = none). An existing configuration wins. Returns 1 when this call set the type.
redis.call('hsetnx', KEYS[1], 'rate', ARGV[1])
redis.call('hsetnx', KEYS[1], 'interval', ARGV[2])
redis.call('hsetnx', KEYS[1], 'keepAliveTime', ARGV[4])
local set = redis.call('hsetnx', KEYS[1], 'type', ARGV[3])
if set == 1 and tonumber(ARGV[4]) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[4])
end
return set
