-- Count-down latch: set the count only when N is absent (docs/wire-format.md §9).
-- KEYS[1] count string N; KEYS[2] channel "redisson_countdownlatch__channel__{N}";
-- ARGV[1] count (>= 1); ARGV[2] publish command (PUBLISH or SPUBLISH).
-- Sent with publish_check.lua in front. Returns 1 when set (publishes "1": a new count, the
-- latch is closed), 0 when N exists.
if redis.call('exists', KEYS[1]) == 0 then
  local refused = publish_refused(ARGV[2], KEYS[2])
  if refused then
    return refused
  end
  redis.call('set', KEYS[1], ARGV[1])
  redis.call(ARGV[2], KEYS[2], '1')
  return 1
end
return 0
