-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check
-- Counting semaphore: give back n permits only when N exists (docs/wire-format.md §7).
-- KEYS[1] permits string N; KEYS[2] channel; ARGV[1] n (>= 1); ARGV[2] publish command.
-- Sent with publish_check.lua in front. Returns 1 when released (and publishes the new count),
-- 0 when N is absent.
if redis.call('exists', KEYS[1]) == 1 then
  local refused = publish_refused(ARGV[2], KEYS[2])
  if refused then
    return refused
  end
  local value = redis.call('incrby', KEYS[1], ARGV[1])
  redis.call(ARGV[2], KEYS[2], value)
  return 1
end
return 0
