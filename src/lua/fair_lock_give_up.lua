-- SPDX-License-Identifier: Apache-2.0
-- Fair lock: give up waiting (docs/wire-format.md §4.5).
-- KEYS[1] queue "redisson_lock_queue:TAG(N)"; KEYS[2] timeout set "redisson_lock_timeout:TAG(N)".
-- ARGV[1] owner field O; ARGV[2] wait allowance A (ms).
-- Everyone behind O is expected one allowance earlier; O leaves the list and the set.
-- Grant mode only (redisync, "Direct handoff"; sent after fair_lock_dead_heads.lua,
-- publish_check.lua, grant_pass_on.lua and fair_grant_pass_on.lua): KEYS[3] lock hash N;
-- KEYS[4] channel prefix; KEYS[5] registrations; KEYS[6] grant mark; KEYS[7] grant channel
-- prefix; ARGV[3] publish command; ARGV[4] grant lease (ms); ARGV[5] the acquisition's grant
-- id. O leaves the registrations too (its own registration only), and a grant made to it
-- meanwhile (the grant mark names this acquisition: its field is in N although it never
-- acquired; the grant took it out of the queue) is released and passed on to the new head,
-- never left to its short lease. A hold of O that is not that grant is left alone. Returns 1
-- when it released a grant, else 0 (nil without grant mode).
local grant_mode = KEYS[3] ~= nil
local g = grant_mode and fair_keys(KEYS[5], KEYS[6], KEYS[7]) or nil
if grant_mode then
  local refused = fair_grant_refused(ARGV[3], KEYS[1], KEYS[4], g)
  if refused then
    return refused
  end
end
local queue = redis.call('lrange', KEYS[1], 0, -1)
local i = 1
while i <= #queue and queue[i] ~= ARGV[1] do
  i = i + 1
end
for j = i + 1, #queue do
  redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[j])
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
if not grant_mode then
  return nil
end
fair_deregister(g, ARGV[1], ARGV[5])
if redis.call('hget', KEYS[3], ARGV[1]) == '1' and grant_marked(g, ARGV[1], ARGV[5]) then
  redis.call('del', KEYS[3])
  redis.call('del', g.mark)
  local now = server_now()
  drop_dead_heads(KEYS[1], KEYS[2], now)  -- §4.2, as a release does
  fair_pass_on(KEYS[3], KEYS[1], KEYS[2], KEYS[4], g, ARGV[4], ARGV[3], '0', now)
  return 1
end
return 0
