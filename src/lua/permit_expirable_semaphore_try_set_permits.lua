-- Permit-expirable semaphore: initialise the count only when N is absent (docs/wire-format.md §8).
-- KEYS[1..3], ARGV[1..2]: see permit_expirable_semaphore_common.lua.
-- ARGV[3] n (>= 0). Returns 1 when set (n is published), 0 when N exists.
if redis.call('exists', KEYS[1]) == 0 then
  local refused = publish_refused(ARGV[2], KEYS[3])
  if refused then
    return refused
  end
  redis.call('set', KEYS[1], ARGV[3])
  redis.call(ARGV[2], KEYS[3], ARGV[3])
  return 1
end
return 0
