-- SPDX-License-Identifier: Apache-2.0
-- Non-reentrant lock kinds (docs/wire-format.md §12). Not a script on its own: sent in front of the
-- acquire step of the lock (lock_acquire.lua) or the fair lock (fair_lock_acquire.lua), whose
-- KEYS[1] is the lock hash and ARGV[2] the caller's owner field.
-- When the caller already holds the lock, the step changes nothing and answers an error whose
-- message contains NON_REENTRANT_REACQUIRE (the count stays 1).
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  return redis.error_reply('NON_REENTRANT_REACQUIRE the lock is already held by this owner')
end
