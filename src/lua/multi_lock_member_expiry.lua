-- SPDX-License-Identifier: Apache-2.0
-- A MultiLock's lease set on a member its owner also holds in watchdog mode (an earlier
-- acquisition of the same owner, docs/wire-format.md §6 step 5). KEYS[1] the member's lock
-- key; ARGV[1] the lease ms. The key's expiry becomes the lease unless that would shorten it:
-- the watchdog renews the key for the other hold, and the Client's local deadline of that
-- hold counts from its last renewal; a shorter expiry would end the key before that deadline
-- (the never-shorten rule of a re-entry, issue 22). A member held only by this acquisition
-- gets a plain PEXPIRE instead. Returns 1 when the key exists (as PEXPIRE), else 0.
local ttl = redis.call('pttl', KEYS[1])
if ttl == -2 then
  return 0
end
if ttl < tonumber(ARGV[1]) then
  redis.call('pexpire', KEYS[1], ARGV[1])
end
return 1
