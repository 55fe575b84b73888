-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check
-- Force release (docs/wire-format.md §2.4): delete the lock whoever holds it and wake a waiter.
-- KEYS[1] lock hash; KEYS[2] channel; ARGV[1] message "0"; ARGV[2] publish command;
-- ARGV[3] "1" to publish, "0" not to (spin lock). Returns 1 if the lock existed, else 0.
-- Sent with publish_check.lua in front: the right to publish is checked before any write (a
-- user without it would otherwise have the write done and the script aborted at the publish,
-- its waiters never woken).
if ARGV[3] == '1' then
  local refused = publish_refused(ARGV[2], KEYS[2])
  if refused then
    return refused
  end
end
if redis.call('del', KEYS[1]) == 1 then
  if ARGV[3] == '1' then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
  end
  return 1
end
return 0
