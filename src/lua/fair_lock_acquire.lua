-- SPDX-License-Identifier: Apache-2.0
--@requires fair_lock_dead_heads
-- Fair lock acquire (docs/wire-format.md §4.3 with queueing, §4.4 without).
-- KEYS[1] lock hash N; KEYS[2] queue "redisson_lock_queue:TAG(N)";
-- KEYS[3] timeout set "redisson_lock_timeout:TAG(N)".
-- ARGV[1] lease ms; ARGV[2] owner field O; ARGV[3] wait allowance A (ms); ARGV[4] unused (was
-- the client's epoch ms; now is the server's TIME); ARGV[5] "1" to queue (§4.3), "0" for a single non-waiting attempt (§4.4).
-- Grant mode only (redisync, "Direct handoff"): KEYS[4] registrations
-- "redisync_fair_grant:TAG(N)" (fair_grant_pass_on.lua); KEYS[5] grant mark
-- "redisync_grant_mark:TAG(N)"; ARGV[6] this acquisition's grant id ("": it cannot be granted);
-- ARGV[7] registration period ms (0: do not register, e.g. not subscribed yet); ARGV[8] this
-- attempt's number; ARGV[9] "1": non-reentrant (§12: a hold of O found here that is not the
-- grant to this acquisition is refused with NON_REENTRANT_REACQUIRE, nothing changed).
-- Sent after fair_lock_dead_heads.lua (drop_dead_heads), and in grant mode after
-- grant_pass_on.lua and fair_grant_pass_on.lua.
-- Returns nil when acquired (or re-entered); grant mode: -3 when it took its grant. Otherwise,
-- queueing: how long to wait before re-polling (§4.3 steps 4-5); not queueing: 1.
local now = server_now()
local allowance = tonumber(ARGV[3])
local g = KEYS[4] and fair_keys(KEYS[4], KEYS[5]) or nil
local id = ARGV[6] or ''
if g then
  local held = redis.call('hget', KEYS[1], ARGV[2])
  if held == '1' and grant_marked(g, ARGV[2], id) then
    -- The grant made to this acquisition (it left the queue then): one hold, with exactly
    -- the normal lease (the hash is this one hold; the grant lease may have been longer).
    redis.call('del', g.mark)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return -3
  end
  if held and ARGV[9] == '1' then
    return redis.error_reply('NON_REENTRANT_REACQUIRE the lock is already held by this owner')
  end
  local pending = held and grant_pending_for_another(g, ARGV[2], id)
  if pending then
    return pending
  end
  if held then
    grant_unmark(g, ARGV[2])  -- re-entered below: no longer just a grant
  end
  fair_deregister(g, ARGV[2], id)  -- registered again below while it still waits
end
-- The waiter running this step is alive: whatever its deadline says (a Java client's pop
-- subtracts that client's allowance from it), it is not a dead head for the sweep below. Its
-- deadline is set properly further down (step 4). Nothing between here and there changes it:
-- the sweep stops at a live head, and the steps that take the lock return.
local mine = redis.call('zscore', KEYS[3], ARGV[2])
if mine ~= false and tonumber(mine) <= now then
  mine = now + allowance
  redis.call('zadd', KEYS[3], mine, ARGV[2])
end
drop_dead_heads(KEYS[2], KEYS[3], now)  -- §4.2 (fair_lock_dead_heads.lua)
if redis.call('exists', KEYS[1]) == 0 and
    (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  -- Everyone behind moved one place up: each is expected one allowance earlier.
  for _, waiter in ipairs(redis.call('zrange', KEYS[3], 0, -1)) do
    redis.call('zincrby', KEYS[3], -allowance, waiter)
  end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then redis.call('pexpire', KEYS[1], ARGV[1]) end  -- never shortens (issue 22)
  return nil
end
if ARGV[5] ~= '1' then
  return 1
end
-- Grant mode: a waiter left queued registers (or refreshes) as grant-capable, with its
-- allowance, which a grant to it subtracts from the waiters behind (fair_grant_pass_on.lua).
local function register()
  local period = tonumber(ARGV[7] or '0')
  if g and period > 0 and id ~= '' and
      grant_call('hset', g.registrations, ARGV[2],
                 (now + period) .. ':' .. allowance .. ':' .. id .. ':' .. ARGV[8]) then
    if redis.call('pttl', g.registrations) < period then
      redis.call('pexpire', g.registrations, period)
    end
  end
end
if mine ~= false then
  -- A waiter that re-polls is alive: its deadline moves to one allowance per place from the
  -- head (place k: now + k*A). Queue deadlines are chained, each the one ahead plus A, and
  -- every pop subtracts A from all; refreshed this way a deadline stays right as the waiter
  -- moves up, however many pops come before its next poll. (Refreshed to now + A, the next
  -- pop left it at about now, and a live waiter was dropped as dead and queued again at the
  -- tail.) redisync waiters re-poll at least every third of A (fair_poll.h), so with a short
  -- A a killed or stopped waiter holds the head for at most about A.
  local target = now + queue_place(KEYS[2], ARGV[2]) * allowance
  if tonumber(mine) < target then
    redis.call('zadd', KEYS[3], target, ARGV[2])
  end
  register()
  return math.max(0, redis.call('pttl', KEYS[1]))
end
local last = redis.call('lindex', KEYS[2], -1)
local base
-- A new waiter's deadline: one allowance per place from now, as a re-poll sets it (above).
-- Redisson chains it from the last waiter's deadline plus A, or counts the first waiter's A
-- from the end of the holder's lease (its waiters never refresh). Chained alone, a deadline
-- descends from the oldest waiter's: when the lock passes round faster than waiters re-poll,
-- none of them ever refreshes, every pop takes A off, and the live head of the moment the
-- first waiter's allowance ran out was dropped as dead. Counted from now, each waiter's
-- deadline is its own: it reaches the head at most A after it queued or last polled, which is
-- also how long a waiter that dies at once holds the head. Never below the chain, so the
-- queue's deadlines stay in order behind a Java waiter too. The reply is what it was: the
-- wait until the last waiter's deadline, or the holder's lease left (how long to wait).
local deadline = now + queue_place(KEYS[2], ARGV[2]) * allowance
if last ~= false and last ~= ARGV[2] and redis.call('zscore', KEYS[3], last) ~= false then
  local chained = tonumber(redis.call('zscore', KEYS[3], last))
  base = chained - now
  deadline = math.max(deadline, chained + allowance)
else
  base = redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], deadline, ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
end
register()
return base
