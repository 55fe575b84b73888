-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check release_record
-- Reentrant lock release (docs/wire-format.md §2.3).
-- KEYS[1] lock hash; KEYS[2] channel; KEYS[3] release record "redisson_unlock_latch:{N}:R"
-- ARGV[1] message "0"; ARGV[2] lease for the remaining holds (ms); ARGV[3] owner field;
-- ARGV[4] release record expiry (ms); ARGV[5] publish command (PUBLISH or SPUBLISH);
-- ARGV[6] "1" to publish on release, "0" not to (spin lock).
-- Returns nil: caller is not the owner; 0: still held (reentrant); 1: released.
-- Every outcome is recorded in KEYS[3], "not the owner" as -1 (docs/wire-format.md §1.8): a
-- second copy of this call (a resend, or a first copy arriving late) returns the recorded
-- outcome, -1 for nil, and changes nothing.
-- Checked before any write: a user without the right to publish would otherwise have the
-- write done and the script aborted at the publish, its waiters never woken.
-- Sent after publish_check.lua and release_record.lua.
local refused = ARGV[6] == '1' and publish_refused(ARGV[5], KEYS[2]) or nil
local reply = release_hold(refused, KEYS[1], ARGV[3], ARGV[2], KEYS[3], ARGV[4])
if reply ~= false then
  return reply
end
redis.call('del', KEYS[1])
if ARGV[6] == '1' then
  redis.call(ARGV[5], KEYS[2], ARGV[1])
end
return record_outcome(KEYS[3], 1, ARGV[4])
