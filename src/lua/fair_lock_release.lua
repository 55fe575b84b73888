-- SPDX-License-Identifier: Apache-2.0
--@requires fair_lock_dead_heads publish_check grant_pass_on fair_grant_pass_on release_record
-- Fair lock release (docs/wire-format.md §4.6).
-- KEYS[1] lock hash N; KEYS[2] queue; KEYS[3] timeout set;
-- KEYS[4] channel prefix "redisson_lock__channel:TAG(N)" (the head waiter's channel is
-- "<prefix>:<its owner field>"); KEYS[5] release record "redisson_unlock_latch:TAG(N):R".
-- ARGV[1] message "0"; ARGV[2] lease for the remaining holds (ms); ARGV[3] owner field O;
-- ARGV[4] unused (now is the server's TIME); ARGV[5] publish command; ARGV[6] release record expiry (ms).
-- Grant mode only (redisync, "Direct handoff"): KEYS[6] registrations
-- "redisync_fair_grant:TAG(N)"; KEYS[7] grant mark "redisync_grant_mark:TAG(N)"; KEYS[8] grant
-- channel prefix "redisync_grant__channel:TAG(N)"; ARGV[7] grant lease (ms): a registered live
-- head is granted the lock instead of woken.
-- Sent after fair_lock_dead_heads.lua (drop_dead_heads), publish_check.lua, grant_pass_on.lua,
-- fair_grant_pass_on.lua and release_record.lua.
-- Returns nil: caller is not the owner; 0: still held (reentrant); 1: released; 2: the lock
-- no longer existed (the next waiter is woken all the same, as Redisson does; the caller's
-- hold, if it believed it had one, was lost). Every outcome is recorded in KEYS[5], nil as
-- -1, as in lock_release.lua.
-- Checked before any write: a user without the right to publish would otherwise have the
-- write done and the script aborted at the publish, its waiters never woken. The message goes
-- to the head waiter's channel, and which waiter that is is known only after the dead heads
-- are dropped (a write), so every queued waiter's channel is checked, and the caller's own
-- (a pattern ACL can allow one channel and not another).
if redis.acl_check_cmd then
  local channels = {KEYS[4] .. ':' .. ARGV[3]}
  if not KEYS[8] then  -- in grant mode fair_grant_refused (below) checks the waiters' channels
    for _, waiter in ipairs(redis.call('lrange', KEYS[2], 0, -1)) do
      channels[#channels + 1] = KEYS[4] .. ':' .. waiter
    end
  end
  for _, channel in ipairs(channels) do
    if not redis.acl_check_cmd(ARGV[5], channel, ARGV[1]) then
      return redis.error_reply('NOPERM this user may not ' .. ARGV[5] .. ' to channel ' .. channel ..
        ' (redisync wakes waiters with it; grant it with ACL SETUSER <user> &<channel pattern>);' ..
        ' nothing was changed')
    end
  end
end
local g = KEYS[8] and fair_keys(KEYS[6], KEYS[7], KEYS[8]) or nil
if g then  -- grant mode: the grant channels too (fair_grant_pass_on.lua)
  local refused = fair_grant_refused(ARGV[5], KEYS[2], KEYS[4], g)
  if refused then
    return refused
  end
end
local early = answered_early(nil, KEYS[5])
if early ~= false then
  return early
end
local now = server_now()
drop_dead_heads(KEYS[2], KEYS[3], now)  -- §4.2 (fair_lock_dead_heads.lua)
-- Wakes the head waiter, or in grant mode grants it the lock (fair_grant_pass_on.lua).
local function wake_head()
  fair_pass_on(KEYS[1], KEYS[2], KEYS[3], KEYS[4], g, ARGV[7], ARGV[5], ARGV[1], now)
end
if redis.call('exists', KEYS[1]) == 0 then
  wake_head()
  return record_outcome(KEYS[5], 2, ARGV[6])
end
local reply = drop_hold(KEYS[1], ARGV[3], ARGV[2], KEYS[5], ARGV[6])
if reply == 0 and g then
  grant_unmark(g, ARGV[3])  -- a hold re-entered since its grant: no longer just the grant
end
if reply ~= false then
  return reply
end
redis.call('del', KEYS[1])
if g then
  grant_unmark(g, ARGV[3])  -- a grant released before its extension: its mark ends with it
end
record_outcome(KEYS[5], 1, ARGV[6])
wake_head()
return 1
