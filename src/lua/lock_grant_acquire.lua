-- SPDX-License-Identifier: Apache-2.0
--@requires grant_pass_on
-- Lock, FencedLock and NonReentrantLock acquire in grant mode (docs/wire-format.md §2.2, §11,
-- §12 and "Direct handoff"): the plain acquire, plus the waiter's registration for a grant and
-- the taking of a grant made to it.
-- KEYS[1] lock hash N; KEYS[2] registrations "redisync_lock_grant:TAG(N)"; KEYS[3] their ids
-- "redisync_lock_grant_id:TAG(N)"; KEYS[4] grant mark "redisync_grant_mark:TAG(N)"; KEYS[5]
-- (FencedLock only) the token counter "redisson_lock_token:TAG(N)".
-- ARGV[1] lease ms; ARGV[2] owner field O; ARGV[3] this acquisition's grant id ("" when this
-- client holds O already; an acquisition that cannot be granted because another acquisition
-- of O on N is listed sends its own id and registration period 0);
-- ARGV[4] registration period ms (0: do not register, e.g. not subscribed to the grant channel
-- yet); ARGV[5] this attempt's number; ARGV[6] "1": reply with the token (FencedLock
-- acquire-with-token); ARGV[7] "1": non-reentrant (§12: a hold of O found here that is not a
-- grant to this acquisition is refused with NON_REENTRANT_REACQUIRE, nothing changed).
-- Returns, without token: nil acquired, -3 acquired by taking its grant, else PTTL of N (or,
-- while a grant of O's hold to another acquisition is not taken, how long to wait for it:
-- grant_pending_for_another).
-- With token: {-1, token} acquired, {-3, token} took its grant, else {PTTL, -1}.
-- Sent after grant_pass_on.lua.
local g = grant_keys(KEYS[2], KEYS[3], KEYS[4], nil, KEYS[5])
local field, id = ARGV[2], ARGV[3]
local function reply(code, token)
  if ARGV[6] == '1' then
    return {code, token}
  end
  if code == -1 then
    return nil
  end
  return code
end
local held = redis.call('hget', KEYS[1], field)
if held == '1' and grant_marked(g, field, id) then
  -- The grant made to this acquisition (the hash is that one hold): taken with exactly the
  -- normal lease, shorter or longer than the releaser's grant lease. Its token was issued at
  -- the grant.
  redis.call('del', g.mark)
  redis.call('pexpire', KEYS[1], ARGV[1])
  local token = -1
  if g.token then
    token = tonumber(redis.call('get', g.token) or '0')
  end
  return reply(-3, token)
end
if held and ARGV[7] == '1' then
  return redis.error_reply('NON_REENTRANT_REACQUIRE the lock is already held by this owner')
end
local pending = held and grant_pending_for_another(g, field, id)
if pending then
  return reply(pending, -1)
end
if held or redis.call('exists', KEYS[1]) == 0 then
  -- First the registration goes (reads and deletes only: a key of another type fails the
  -- script here, before the hold is written), and a mark naming O ends: a hold of O re-entered
  -- is no longer just a grant.
  grant_deregister(g, field, id)
  if held then
    grant_unmark(g, field)
  end
  local token = -1
  if g.token then
    token = redis.call('incr', g.token)
  end
  redis.call('hincrby', KEYS[1], field, 1)
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then redis.call('pexpire', KEYS[1], ARGV[1]) end  -- never shortens (issue 22)
  return reply(-1, token)
end
grant_register(g, field, ARGV[4], id, ARGV[5])
return reply(redis.call('pttl', KEYS[1]), -1)
