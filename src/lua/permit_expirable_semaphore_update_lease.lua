-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check permit_expirable_semaphore_common
-- Permit-expirable semaphore: give a held permit a new deadline (docs/wire-format.md §8).
-- KEYS[1..3], ARGV[1..2]: see permit_expirable_semaphore_common.lua.
-- ARGV[3] the id (16 raw bytes); ARGV[4] the new lease in ms, "-1" = no expiry (the deadline
-- is counted from the server's clock).
-- Returns 1 when the id is held (after reclaiming expired permits), else 0.
-- It may publish (a reclaim, a shortened deadline): the right is checked before any write.
local refused = publish_refused(ARGV[2], KEYS[3])
if refused then
  return refused
end
local now = server_now()
reclaim(now, nil)
local old = redis.call('zscore', KEYS[2], ARGV[3])
if old == false then
  return 0
end
local deadline = deadline_of(now, ARGV[4])
redis.call('zadd', KEYS[2], score_text(deadline), ARGV[3])
-- An earlier deadline: waiters sleep until the earliest deadline they saw, so tell them to
-- look again (issue 22: they used to miss the shortened permit's expiry).
if deadline < tonumber(old) then
  redis.call(ARGV[2], KEYS[3], 1)
end
return 1
