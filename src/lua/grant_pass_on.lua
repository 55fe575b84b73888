-- Direct handoff (redisync only, docs/wire-format.md "Direct handoff"). Not a script on its
-- own: the scripts that free a lock in grant mode are sent with this text in front.
-- grant_now(): the server's clock in epoch ms (registration deadlines are server times).
-- pass_on(...): after the lock hash was deleted, gives the lock to the registered waiter with
-- the earliest deadline that has not passed (an ordinary hold: field -> 1 with the short
-- grant lease, which the waiter's client extends when it hears of it) and announces it on the
-- grantee's client's grant channel, "<grant channel prefix>:<client id>" ("<field> <grant
-- lease ms>" or, with a token counter, "<field> <grant lease ms> <token>"): only that process
-- wakes. The lease is in the message because it is the releaser's setting: the grantee
-- counts it, not its own Config::grant_lease, when it decides how long the grant lasts. With no live registration it
-- publishes Redisson's "0" on the lock channel, exactly as a plain release.
-- Returns the granted field, or false.
local function grant_now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- grant_register(registrations, field, period): registers the waiter `field` for a grant
-- until `period` ms from now (period 0: not at all), and keeps the set at least that long.
-- Registrations whose deadline has passed are dropped here, off the release's path.
local function grant_register(registrations, field, period)
  period = tonumber(period)
  if period > 0 then
    local now = grant_now()
    redis.call('zremrangebyscore', registrations, '-inf', now)
    redis.call('zadd', registrations, now + period, field)
    if redis.call('pttl', registrations) < period then
      redis.call('pexpire', registrations, period)
    end
  end
end
-- The grant channel of the client that owns `field` ("<client id>:<thread id>", or a
-- read-write lock's writer field "<client id>:<thread id>:write").
local function grantee_channel(grant_channel, field)
  local client = string.match(field, '^(.+):[^:]*:write$') or string.match(field, '^(.+):[^:]*$')
  return grant_channel .. ':' .. (client or field)
end
-- The waiter a release that frees the lock now would grant it to: the live registration with
-- the earliest deadline, or false.
local function grant_candidate(registrations)
  return redis.call('zrangebyscore', registrations, grant_now(), '+inf', 'limit', 0, 1)[1] or
    false
end
-- `rw_message` (a read-write lock, §5): the grant is a write hold ("mode" = "write" beside the
-- writer's field), and with no live registration `rw_message` is published instead of "0".
-- `candidate`: grant_candidate()'s answer taken earlier in the same script (it cannot have
-- changed), or nil to look it up here.
local function pass_on(lock, registrations, grant_channel, lock_channel, token_key, grant_lease,
                       publish, rw_message, candidate)
  local first = candidate
  if first == nil then
    first = grant_candidate(registrations)
  end
  if first then
    redis.call('zrem', registrations, first)
    if rw_message then
      redis.call('hset', lock, 'mode', 'write')
    end
    redis.call('hset', lock, first, 1)
    redis.call('pexpire', lock, grant_lease)
    local message = first .. ' ' .. grant_lease
    if token_key then
      message = message .. ' ' .. redis.call('incr', token_key)
    end
    redis.call(publish, grantee_channel(grant_channel, first), message)
    return first
  end
  redis.call(publish, lock_channel, rw_message or '0')
  return false
end
-- The ACL check of a script that may publish on the lock channel or, when a live registration
-- exists, on the grant channel of the earliest one (see publish_check.lua). Reads only.
-- registrations nil (a read-write lock release in wake mode): the lock channel alone.
-- `candidate` (a script whose only publish is pass_on's, given grant_candidate()'s answer):
-- only the one channel pass_on will publish on.
local function grant_publish_refused(publish, lock_channel, grant_channel, registrations,
                                     candidate)
  if redis.acl_check_cmd then
    local channels = {lock_channel}
    if candidate ~= nil then
      channels = {candidate and grantee_channel(grant_channel, candidate) or lock_channel}
    elseif registrations then
      local first = grant_candidate(registrations)
      if first then
        table.insert(channels, grantee_channel(grant_channel, first))
      end
    end
    for _, channel in ipairs(channels) do
      if not redis.acl_check_cmd(publish, channel, '0') then
        return redis.error_reply('NOPERM this user may not ' .. publish .. ' to channel ' ..
          channel .. ' (redisync wakes waiters with it; grant it with ACL SETUSER <user>' ..
          ' &<channel pattern>); nothing was changed')
      end
    end
  end
  return nil
end
