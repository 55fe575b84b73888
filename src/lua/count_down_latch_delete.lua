-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check
-- Count-down latch: delete N (docs/wire-format.md §9).
-- KEYS[1] count string N; KEYS[2] channel; ARGV[1] publish command.
-- Sent with publish_check.lua in front. Returns 1 when N existed (publishes "1"), else 0.
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
local refused = publish_refused(ARGV[1], KEYS[2])
if refused then
  return refused
end
redis.call('del', KEYS[1])
redis.call(ARGV[1], KEYS[2], '1')
return 1
