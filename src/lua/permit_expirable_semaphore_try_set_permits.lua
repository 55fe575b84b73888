-- Permit-expirable semaphore: initialise the count only when N is absent (docs/wire-format.md §8).
-- KEYS[1] permits string N; KEYS[2] sorted set "TAG(N):timeout" (member = 16 raw id bytes,
-- score = expiry epoch ms or 922337203685477 = no expiry); KEYS[3] channel "redisson_sc:TAG(N)".
-- ARGV[1] now (client epoch ms); ARGV[2] publish command (PUBLISH or SPUBLISH).
-- ARGV[3] n (>= 0). Returns 1 when set (n is published), 0 when N exists.
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('set', KEYS[1], ARGV[3])
  redis.call(ARGV[2], KEYS[3], ARGV[3])
  return 1
end
return 0
