-- SPDX-License-Identifier: Apache-2.0
-- Write lock acquire (docs/wire-format.md §5.4), plus redisync's upgrade check (§5.8: Redisson would
-- wait forever here).
-- KEYS[1] lock hash N; ARGV[1] lease ms; ARGV[2] writer field W "<client id>:<thread id>:write";
-- ARGV[3] the same thread's reader field O "<client id>:<thread id>".
-- Grant mode (redisync, "Direct handoff"): KEYS[2] registrations "redisync_rwlock_grant:TAG(N)"
-- (sorted set, member = W, score = deadline in server epoch ms); KEYS[3] their ids
-- "redisync_rwlock_grant_id:TAG(N)"; KEYS[4] grant mark "redisync_grant_mark:TAG(N)"; ARGV[4]
-- registration period ms (0: do not register); ARGV[5] this acquisition's grant id ("": it
-- cannot be granted); ARGV[6] this attempt's number. W found in N with the grant mark naming
-- this acquisition is the grant made to it (grant_pass_on.lua), taken as one hold; a failed
-- attempt registers. KEYS[5] readers key "redisync_rwlock_readers:TAG(N)" (set by a refused
-- redisync reader, rwlock_read_acquire.lua): a free lock is left to the waiting readers (the
-- release that freed it woke them); this writer registers and is answered the key's PTTL.
-- Sent after grant_pass_on.lua in grant mode.
-- Starvation guard (redisync, wake mode only; as lock_acquire.lua): KEYS[2] guard
-- "redisync_rwlock_guard:TAG(N)" (the script then has exactly two keys); ARGV[4] "1": this
-- writer has waited too long, claim the next turn; ARGV[5] the claim's expiry ms. A claim of
-- another writer leaves a free write lock to it (re-entry excepted; nothing is written);
-- taking the lock ends the taker's own claim. Redisson clients ignore the key.
-- Returns nil when acquired (or re-entered); -3 (grant mode) acquired by taking its grant; the
-- string "upgrade" when the caller holds the read lock (waiting for the write lock would
-- never end; no state change); else the PTTL.
local g = #KEYS == 5 and grant_keys(KEYS[2], KEYS[3], KEYS[4], nil, nil, KEYS[5]) or nil
local guard_key = #KEYS == 2 and KEYS[2] or nil
local id = g and ARGV[5] or ''
local mode = redis.call('hget', KEYS[1], 'mode')
local claim = guard_key and redis.call('get', guard_key)
if claim and claim ~= ARGV[2] and redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  if mode == 'read' and redis.call('hexists', KEYS[1], ARGV[3]) == 1 then
    return 'upgrade'
  end
  local ttl = redis.call('pttl', KEYS[1])
  if ttl == -2 then
    ttl = redis.call('pttl', guard_key)  -- free but claimed: wait at most for the claim
  end
  return ttl
end
-- Acquiring below ends this writer's own claim.
local function end_claim()
  if claim == ARGV[2] then
    redis.call('del', guard_key)
  end
end
local readers_turn = mode == false and g and readers_waiting(g)
if readers_turn then
  -- Readers were refused by the last write hold and woken by its release: their turn. The
  -- key lives a grant lease after the last reader's attempt, so a dead reader delays writers
  -- at most that long; the last reader's release grants this registration.
  grant_register(g, ARGV[2], ARGV[4], id, ARGV[6])
  return readers_turn
end
if mode == false then
  -- The registration goes first: a registrations key of another type fails the script here
  -- (WRONGTYPE) before anything was written, not after the hold was.
  if g then
    grant_deregister(g, ARGV[2], id)
  end
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  end_claim()
  return nil
end
if mode == 'write' then
  local held = redis.call('hget', KEYS[1], ARGV[2])
  if g and held == '1' and grant_marked(g, ARGV[2], id) then
    -- The grant made to this acquisition: one hold, with exactly the normal lease (mode is
    -- "write" already; the hash is this one hold, and the grant lease may have been longer).
    redis.call('del', g.mark)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return -3
  end
  local pending = g and held and grant_pending_for_another(g, ARGV[2], id)
  if pending then
    return pending
  end
  if held then
    if g then
      grant_deregister(g, ARGV[2], id)
      grant_unmark(g, ARGV[2])  -- re-entered: no longer just a grant
    end
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    local remaining = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], remaining + tonumber(ARGV[1]))
    end_claim()
    return nil
  end
end
if mode == 'read' and redis.call('hexists', KEYS[1], ARGV[3]) == 1 then
  return 'upgrade'
end
if g then
  grant_register(g, ARGV[2], ARGV[4], id, ARGV[6])
end
if guard_key and ARGV[4] == '1' then
  redis.call('set', guard_key, ARGV[2], 'px', ARGV[5])
end
return redis.call('pttl', KEYS[1])
