-- SPDX-License-Identifier: Apache-2.0
-- The extension of a granted hold (direct handoff, docs/wire-format.md "Direct handoff").
-- KEYS[1] lock hash N; KEYS[2] grant mark "redisync_grant_mark:TAG(N)"; ARGV[1] the holder's
-- lease ms; ARGV[2] owner field; ARGV[3] the acquisition's grant id.
-- A release granted N with the releaser's grant lease, which may be longer than the grantee's
-- own lease. While the grant mark names this acquisition's grant and the hash is still exactly
-- the grant (the field at 1 and nothing else but a read-write lock's "mode"), its expiry is
-- set to the lease, shorter or longer: a grantee that dies then frees the lock within its own
-- lease. A hold re-entered or joined since, or found after the grant was taken, keeps the
-- never-shorten rule of renewals (issue 22). The grant mark ends here: the grant is taken.
-- Returns {1} held (expiry set), {0} gone; the shape of lock_renew.lua's reply.
local marked = redis.pcall('get', KEYS[2]) == ARGV[2] .. ' ' .. ARGV[3]  -- pcall: any key there
if marked then
  redis.call('del', KEYS[2])
end
local count = redis.call('hget', KEYS[1], ARGV[2])
if count == false then
  return {0}
end
-- Only while the mark names this grant is the hold surely the grant's: a copy of the
-- extension that comes later (resent after a lost reply) may find the same owner's next hold,
-- with its own longer lease, in the same shape.
local fields = redis.call('hlen', KEYS[1])
local just_the_grant = marked and count == '1' and
  (fields == 1 or (fields == 2 and redis.call('hexists', KEYS[1], 'mode') == 1))
if just_the_grant or redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('pexpire', KEYS[1], ARGV[1])
end
return {1}
