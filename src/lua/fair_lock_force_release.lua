-- SPDX-License-Identifier: Apache-2.0
--@requires fair_lock_dead_heads publish_check
-- Fair lock force release (docs/wire-format.md §4.7): delete the lock whoever holds it and wake the
-- head waiter.
-- KEYS[1] lock hash N; KEYS[2] queue; KEYS[3] timeout set; KEYS[4] channel prefix
-- "redisson_lock__channel:TAG(N)".
-- ARGV[1] message "0"; ARGV[2] unused (now is the server's TIME); ARGV[3] publish command.
-- Sent after fair_lock_dead_heads.lua (drop_dead_heads) and publish_check.lua (publish_refused).
-- Returns 1 if the lock existed, else 0.
-- The right to publish is checked before any write (on a waiter-shaped channel, prefix:x): a
-- user without it would otherwise have the write done and the script aborted at the publish,
-- its waiters never woken.
local refused = publish_refused(ARGV[3], KEYS[4] .. ':' .. 'x')
if refused then
  return refused
end
local now = server_now()
drop_dead_heads(KEYS[2], KEYS[3], now)  -- §4.2 (fair_lock_dead_heads.lua)
if redis.call('del', KEYS[1]) == 1 then
  local head = redis.call('lindex', KEYS[2], 0)
  if head ~= false then
    redis.call(ARGV[3], KEYS[4] .. ':' .. head, ARGV[1])
  end
  return 1
end
return 0
