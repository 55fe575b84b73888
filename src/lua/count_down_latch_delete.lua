-- Count-down latch: delete N (docs/wire-format.md §9).
-- KEYS[1] count string N; KEYS[2] channel; ARGV[1] publish command.
-- Returns 1 when N existed (publishes "1"), else 0.
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[1], KEYS[2], '1')
  return 1
end
return 0
