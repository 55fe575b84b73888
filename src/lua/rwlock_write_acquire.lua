-- Write lock acquire (docs/wire-format.md §5.4), plus redisync's upgrade check (§5.8: Redisson would
-- wait forever here).
-- KEYS[1] lock hash N; ARGV[1] lease ms; ARGV[2] writer field W "<client id>:<thread id>:write";
-- ARGV[3] the same thread's reader field O "<client id>:<thread id>".
-- Returns nil when acquired (or re-entered); the string "upgrade" when the caller holds the
-- read lock (waiting for the write lock would never end; no state change); else the PTTL.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local remaining = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], remaining + tonumber(ARGV[1]))
  return nil
end
if mode == 'read' and redis.call('hexists', KEYS[1], ARGV[3]) == 1 then
  return 'upgrade'
end
return redis.call('pttl', KEYS[1])
