-- Counting semaphore: initialise the count only when N is absent (docs/wire-format.md §7).
-- KEYS[1] permits string N; KEYS[2] channel; ARGV[1] n (>= 0); ARGV[2] publish command;
-- ARGV[3] expiry in ms, or "0" for none. Sent with publish_check.lua in front.
-- Returns 1 when set (and publishes n), 0 when N already exists.
if redis.call('exists', KEYS[1]) == 0 then
  local refused = publish_refused(ARGV[2], KEYS[2])
  if refused then
    return refused
  end
  if tonumber(ARGV[3]) > 0 then
    redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3])
  else
    redis.call('set', KEYS[1], ARGV[1])
  end
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0
