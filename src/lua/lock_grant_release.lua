-- Lock and FencedLock release in grant mode (docs/wire-format.md §2.3 and "Direct handoff"):
-- the plain release, and the freed lock goes to a registered waiter (grant_pass_on.lua).
-- KEYS[1] lock hash N; KEYS[2] lock channel; KEYS[3] release record; KEYS[4] registrations
-- "redisync_lock_grant:TAG(N)"; KEYS[5] grant channel prefix "redisync_grant__channel:TAG(N)";
-- KEYS[6] (FencedLock only) token counter: a grant issues the next token.
-- ARGV[1] message "0"; ARGV[2] lease for the remaining holds (ms); ARGV[3] owner field;
-- ARGV[4] release record expiry (ms); ARGV[5] publish command; ARGV[6] grant lease (ms).
-- Returns nil: caller is not the owner; 0: still held (reentrant); 1: released. Every
-- outcome is recorded in KEYS[3], nil as -1, as in lock_release.lua.
-- Sent after grant_pass_on.lua.
local refused = grant_publish_refused(ARGV[5], KEYS[2], KEYS[5], KEYS[4])
if refused then
  return refused
end
local recorded = redis.call('get', KEYS[3])
if recorded ~= false then
  return tonumber(recorded)
end
local held = redis.call('hget', KEYS[1], ARGV[3])
if held == false then
  redis.call('set', KEYS[3], -1, 'px', ARGV[4])
  return nil
end
if tonumber(held) > 1 then
  redis.call('hincrby', KEYS[1], ARGV[3], -1)
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then redis.call('pexpire', KEYS[1], ARGV[2]) end  -- never shortens (issue 22)
  redis.call('set', KEYS[3], 0, 'px', ARGV[4])
  return 0
end
redis.call('del', KEYS[1])
pass_on(KEYS[1], KEYS[4], KEYS[5], KEYS[2], KEYS[6], ARGV[6], ARGV[5])
redis.call('set', KEYS[3], 1, 'px', ARGV[4])
return 1
