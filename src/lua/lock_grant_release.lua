-- SPDX-License-Identifier: Apache-2.0
--@requires release_record grant_pass_on
-- Lock and FencedLock release in grant mode (docs/wire-format.md §2.3 and "Direct handoff"):
-- the plain release, and the freed lock goes to a registered waiter (grant_pass_on.lua).
-- KEYS[1] lock hash N; KEYS[2] lock channel; KEYS[3] release record; KEYS[4] registrations
-- "redisync_lock_grant:TAG(N)"; KEYS[5] their ids "redisync_lock_grant_id:TAG(N)"; KEYS[6]
-- grant mark "redisync_grant_mark:TAG(N)"; KEYS[7] grant channel prefix
-- "redisync_grant__channel:TAG(N)"; KEYS[8] (FencedLock only) token counter: a grant issues
-- the next token.
-- ARGV[1] message "0"; ARGV[2] lease for the remaining holds (ms); ARGV[3] owner field;
-- ARGV[4] release record expiry (ms); ARGV[5] publish command; ARGV[6] grant lease (ms).
-- Returns nil: caller is not the owner; 0: still held (reentrant); 1: released. Every
-- outcome is recorded in KEYS[3], nil as -1, as in lock_release.lua.
-- Sent after release_record.lua and grant_pass_on.lua.
-- The grantee is looked up once: the check and the grant use the same answer (the script is
-- atomic), and only the channel the release will publish on is checked.
local g = grant_keys(KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8])
local candidate = grant_candidate(g)
local refused = grant_publish_refused(ARGV[5], KEYS[2], g, candidate)
local early = answered_early(refused, KEYS[3])
if early ~= false then
  return early
end
local reply = drop_hold(KEYS[1], ARGV[3], ARGV[2], KEYS[3], ARGV[4])
if reply == 0 then
  grant_unmark(g, ARGV[3])  -- a hold re-entered since its grant: no longer just the grant
end
if reply ~= false then
  return reply
end
redis.call('del', KEYS[1])
grant_unmark(g, ARGV[3])  -- a grant released before its extension: its mark ends with it
pass_on(KEYS[1], g, KEYS[2], ARGV[6], ARGV[5], nil, candidate)
return record_outcome(KEYS[3], 1, ARGV[4])
