-- SPDX-License-Identifier: Apache-2.0
-- A MultiLock's lease set on a member it took (docs/wire-format.md §6 step 5). KEYS[1] the
-- member's lock key; ARGV[1] the lease ms; ARGV[2] the owner's field; ARGV[3] "1" when the
-- owner also holds the member in watchdog mode (an earlier acquisition of the same owner).
-- Only while the owner's field is there: a hold of the walk that has already expired (the
-- walk took long) leaves the key to whoever took it since, whose lease a plain PEXPIRE would
-- cut. With ARGV[3] = "1" the expiry becomes the lease unless that would shorten it: the
-- watchdog renews the key for the other hold, and the Client's local deadline of that hold
-- counts from its last renewal (the never-shorten rule of a re-entry, issue 22). Returns 1
-- when the lease was set (or kept), else 0.
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return 0
end
if ARGV[3] == '1' and redis.call('pttl', KEYS[1]) >= tonumber(ARGV[1]) then
  return 1
end
redis.call('pexpire', KEYS[1], ARGV[1])
return 1
