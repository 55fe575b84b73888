-- Fair lock: give up waiting (docs/wire-format.md §4.5).
-- KEYS[1] queue "redisson_lock_queue:TAG(N)"; KEYS[2] timeout set "redisson_lock_timeout:TAG(N)".
-- ARGV[1] owner field O; ARGV[2] wait allowance A (ms).
-- Everyone behind O is expected one allowance earlier; O leaves the list and the set.
local queue = redis.call('lrange', KEYS[1], 0, -1)
local i = 1
while i <= #queue and queue[i] ~= ARGV[1] do
  i = i + 1
end
for j = i + 1, #queue do
  redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[j])
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
return nil
