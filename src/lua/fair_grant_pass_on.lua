-- SPDX-License-Identifier: Apache-2.0
-- FairLock direct handoff (redisync only, docs/wire-format.md "Direct handoff"). Not a script
-- on its own: the fair lock's release and give-up are sent with fair_lock_dead_heads.lua
-- (server_now), publish_check.lua (publish_refused), grant_pass_on.lua (grant_to,
-- grantee_channel) and this text in front; its acquire with grant_pass_on.lua.
-- Registrations: the hash "redisync_fair_grant:TAG(N)", field = a waiting owner field, value
-- "<deadline>:<allowance>:<id>:<attempt>" (server epoch ms; the waiter's wait allowance A in
-- ms, §4.1; its acquisition's grant id and the number of the attempt that registered).
-- fair_keys(grants, mark, channel): grant_pass_on.lua's key table for the fair lock (its
-- registrations hold their ids: no ids hash, no sorted set).
local function fair_keys(grants, mark, channel)
  return grant_keys(grants, nil, mark, channel, nil)
end
-- fair_registration(g, field): the registration of `field`: deadline, allowance, id, attempt
-- (numbers but the id), or nil when there is none (or it is not of this form).
local function fair_registration(g, field)
  local value = grant_call('hget', g.registrations, field)
  if not value then
    return nil
  end
  local deadline, allowance, id, attempt = string.match(value, '^(%d+):(%d+):(%x+):(%d+)$')
  if not deadline then
    return nil
  end
  return tonumber(deadline), tonumber(allowance), id, attempt
end
-- fair_deregister(g, field, id): removes the registration of `field` when it is the
-- acquisition `id`'s.
local function fair_deregister(g, field, id)
  if id == '' then
    return
  end
  local _, _, registered = fair_registration(g, field)
  if registered == id then
    grant_call('hdel', g.registrations, field)
  end
end
-- fair_pass_on(...): after the lock hash was deleted, the queue head gets the lock when it is
-- registered and its registration is live, exactly as Redisson's acquire would give it to the
-- head (§4.3 step 2: it leaves the queue and the timeout set, every remaining waiter's
-- deadline moves A earlier, with the head's own A from its registration), as a grant
-- (grant_to: field -> 1 with the short grant lease, the grant mark, the message on the
-- grantee's channel). Otherwise (wake mode: `g` nil; an unregistered head, e.g. a Java waiter;
-- a stale registration) the head is woken with `message` (Redisson's "0") on its own channel,
-- as a plain release does. `now`: the script's server_now() (one TIME per script). Returns the
-- granted field, or false.
local function fair_pass_on(lock, queue, timeouts, channel_prefix, g, grant_lease, publish,
                            message, now)
  local head = redis.call('lindex', queue, 0)
  if head == false then
    return false
  end
  if g then
    local deadline, allowance, id, attempt = fair_registration(g, head)
    grant_call('hdel', g.registrations, head)
    if deadline and deadline > now then
      redis.call('lpop', queue)
      redis.call('zrem', timeouts, head)
      for _, waiter in ipairs(redis.call('zrange', timeouts, 0, -1)) do
        redis.call('zincrby', timeouts, -allowance, waiter)
      end
      grant_to(lock, g, head, id, attempt, grant_lease, publish, false)
      return head
    end
  end
  redis.call(publish, channel_prefix .. ':' .. head, message)
  return false
end
local function fair_grant_refused(publish, queue, channel_prefix, g)
  local waiters = redis.call('lrange', queue, 0, -1)
  for first = 1, #waiters, 500 do
    local last = math.min(first + 499, #waiters)
    local registrations = grant_call('hmget', g.registrations, unpack(waiters, first, last)) or {}
    for i = first, last do
      local waiter = waiters[i]
      local refused = publish_refused(publish, channel_prefix .. ':' .. waiter)
      if not refused and registrations[i - first + 1] then
        refused = publish_refused(publish, grantee_channel(g.channel, waiter))
      end
      if refused then
        return refused
      end
    end
  end
  return nil
end
