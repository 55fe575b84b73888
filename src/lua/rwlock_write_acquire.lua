-- Write lock acquire (docs/wire-format.md §5.4), plus redisync's upgrade check (§5.8: Redisson would
-- wait forever here).
-- KEYS[1] lock hash N; ARGV[1] lease ms; ARGV[2] writer field W "<client id>:<thread id>:write";
-- ARGV[3] the same thread's reader field O "<client id>:<thread id>".
-- Grant mode (redisync, "Direct handoff"), a fresh acquisition only (this client has no
-- write hold of W on N): KEYS[2] registrations "redisync_rwlock_grant:TAG(N)" (sorted set,
-- member = W, score = deadline in server epoch ms); ARGV[4] registration period ms (0: do not
-- register). A field W found in N is then a grant made to this acquisition (a release gave
-- it the lock, grant_pass_on.lua) and is taken as one hold; a failed attempt registers.
-- Sent after grant_pass_on.lua (grant_register) in grant mode.
-- Returns nil when acquired (or re-entered); -3 (grant mode) acquired by taking a grant; the
-- string "upgrade" when the caller holds the read lock (waiting for the write lock would
-- never end; no state change); else the PTTL.
local grant = KEYS[2] ~= nil
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  -- The registration is removed first: a registrations key of another type fails the script
  -- here (WRONGTYPE) before anything was written, not after the hold was.
  if grant then
    redis.call('zrem', KEYS[2], ARGV[2])
  end
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  if grant then
    -- Granted: one hold, with exactly the normal lease (mode is "write" already; the hash
    -- is this one hold, and the grant lease may have been longer).
    redis.call('zrem', KEYS[2], ARGV[2])
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return -3
  end
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local remaining = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], remaining + tonumber(ARGV[1]))
  return nil
end
if mode == 'read' and redis.call('hexists', KEYS[1], ARGV[3]) == 1 then
  return 'upgrade'
end
if grant then
  grant_register(KEYS[2], ARGV[2], ARGV[4])
end
return redis.call('pttl', KEYS[1])
