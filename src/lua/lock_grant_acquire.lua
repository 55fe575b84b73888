-- Lock and FencedLock acquire in grant mode (docs/wire-format.md §2.2, §11 and "Direct
-- handoff"): the plain acquire, plus the waiter's registration for a grant.
-- KEYS[1] lock hash N; KEYS[2] registrations "redisync_lock_grant:TAG(N)" (sorted set,
-- member = owner field, score = deadline in server epoch ms); KEYS[3] (FencedLock only) the
-- token counter "redisson_lock_token:TAG(N)".
-- ARGV[1] lease ms; ARGV[2] owner field O; ARGV[3] "1": a fresh acquisition (this client has
-- no hold of O on N), so a field O found in N is a grant made to this acquisition and is
-- taken as one hold; ARGV[4] registration period ms (0: do not register, e.g. not subscribed
-- to the grant channel yet); ARGV[5] "1": reply with the token (FencedLock acquire-with-token).
-- Returns, without token: nil acquired, -3 acquired by taking a grant, else PTTL of N.
-- With token: {-1, token} acquired, {-3, token} took a grant, else {PTTL, -1}.
-- Sent after grant_pass_on.lua (grant_register).
local fenced = KEYS[3] ~= nil
local function reply(code, token)
  if ARGV[5] == '1' then
    return {code, token}
  end
  if code == -1 then
    return nil
  end
  return code
end
local held = redis.call('hget', KEYS[1], ARGV[2])
if held and ARGV[3] == '1' then
  -- Granted by a release (or a hold of ours this client no longer counts): one hold, with
  -- exactly the normal lease (shorter or longer than the releaser's grant lease: the hash
  -- is this one hold, so its expiry is this hold's lease). The token was issued at the grant.
  redis.call('zrem', KEYS[2], ARGV[2])
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  local token = -1
  if fenced then
    token = tonumber(redis.call('get', KEYS[3]) or '0')
  end
  return reply(-3, token)
end
if held or redis.call('exists', KEYS[1]) == 0 then
  -- The registration is removed first: a registrations key of another type fails the script
  -- here (WRONGTYPE) before anything was written, not after the hold was.
  if ARGV[3] == '1' then
    redis.call('zrem', KEYS[2], ARGV[2])
  end
  local token = -1
  if fenced then
    token = redis.call('incr', KEYS[3])
  end
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then redis.call('pexpire', KEYS[1], ARGV[1]) end  -- never shortens (issue 22)
  return reply(-1, token)
end
grant_register(KEYS[2], ARGV[2], ARGV[4])
return reply(redis.call('pttl', KEYS[1]), -1)
