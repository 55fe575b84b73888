-- Counting semaphore: try to take n permits (wire spec §7).
-- KEYS[1] permits string N; ARGV[1] n (>= 1).
-- Returns 1 when taken, 0 when N is absent or holds fewer than n permits.
local value = redis.call('get', KEYS[1])
if value ~= false and tonumber(value) >= tonumber(ARGV[1]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  return 1
end
return 0
