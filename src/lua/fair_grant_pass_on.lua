-- FairLock direct handoff (redisync only, docs/wire-format.md "Direct handoff"). Not a script
-- on its own: the fair lock's release and give-up are sent with fair_lock_dead_heads.lua
-- (server_now), publish_check.lua (publish_refused), grant_pass_on.lua (grantee_channel) and
-- this text in front.
-- Registrations: the hash "redisync_fair_grant:TAG(N)", field = a waiting owner field, value
-- "<deadline>:<allowance>" (server epoch ms; the waiter's wait allowance A in ms, §4.1).
-- fair_pass_on(...): after the lock hash was deleted, the queue head gets the lock when it is
-- registered and its registration is live, exactly as Redisson's acquire would give it to the
-- head (§4.3 step 2: it leaves the queue and the timeout set, every remaining waiter's
-- deadline moves A earlier, with the head's own A from its registration), as an ordinary hold
-- (field -> 1) with the short grant lease, announced on the grant channel as "<field> <grant
-- lease ms>" (grant_pass_on.lua).
-- Otherwise (wake mode: `grants` nil; an unregistered head, e.g. a Java waiter; a stale
-- registration) the head is woken with `message` (Redisson's "0") on its own channel, as a
-- plain release does. `now`: the script's server_now() (one TIME per script). Returns the
-- granted field, or false.
local function fair_pass_on(lock, queue, timeouts, channel_prefix, grants, grant_channel,
                            grant_lease, publish, message, now)
  local head = redis.call('lindex', queue, 0)
  if head == false then
    return false
  end
  local registration = grants and redis.call('hget', grants, head)
  if registration then
    redis.call('hdel', grants, head)
    local deadline, allowance = string.match(registration, '^(%d+):(%d+)$')
    if deadline and tonumber(deadline) > now then
      redis.call('lpop', queue)
      redis.call('zrem', timeouts, head)
      for _, waiter in ipairs(redis.call('zrange', timeouts, 0, -1)) do
        redis.call('zincrby', timeouts, -tonumber(allowance), waiter)
      end
      redis.call('hset', lock, head, 1)
      redis.call('pexpire', lock, grant_lease)
      redis.call(publish, grantee_channel(grant_channel, head), head .. ' ' .. grant_lease)
      return head
    end
  end
  redis.call(publish, channel_prefix .. ':' .. head, message)
  return false
end
-- The ACL check of a script that may wake or grant the queue head (grant mode): every queued
-- waiter's own channel and, for a registered one, its grantee grant channel (which waiter is
-- the head is known only after the dead heads are dropped, a write). Reads only; nil when
-- allowed. The waiters' registrations are read with one HMGET per 500 waiters, not one
-- HEXISTS each: this runs in every release, on the handoff's path.
local function fair_grant_refused(publish, queue, channel_prefix, grants, grant_channel)
  local waiters = redis.call('lrange', queue, 0, -1)
  for first = 1, #waiters, 500 do
    local last = math.min(first + 499, #waiters)
    local registrations = redis.call('hmget', grants, unpack(waiters, first, last))
    for i = first, last do
      local waiter = waiters[i]
      local refused = publish_refused(publish, channel_prefix .. ':' .. waiter)
      if not refused and registrations[i - first + 1] then
        refused = publish_refused(publish, grantee_channel(grant_channel, waiter))
      end
      if refused then
        return refused
      end
    end
  end
  return nil
end
