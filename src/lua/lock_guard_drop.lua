-- SPDX-License-Identifier: Apache-2.0
-- Starvation guard (redisync only, see lock_acquire.lua): a waiter that gives up (its wait ran
-- out, or an error ended it) drops its own claim, so a free lock is not held back from the
-- other redisync clients for the rest of the claim's expiry.
-- KEYS[1] guard "redisync_lock_guard:TAG(N)"; ARGV[1] the waiter's owner field.
-- Returns 1 if the claim was this waiter's and is gone, else 0.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
