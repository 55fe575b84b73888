-- SPDX-License-Identifier: Apache-2.0
-- Direct handoff (redisync only, docs/wire-format.md "Direct handoff"). Not a script on its
-- own: the scripts of grant mode are sent with this text in front.
--
-- Who a grant is for. Each waiting acquisition has an id of its own (random, from its client)
-- and numbers its attempts; a registering attempt stores "<id>:<attempt>" for its owner field
-- (Lock, FencedLock, ReadWriteLock: in the ids hash beside the registrations; FairLock: in its
-- registration). A grant copies them: the grant mark "redisync_grant_mark:TAG(N)" = "<field>
-- <id>" lives as long as the grant lease, and the grantee's message names both. Only the
-- acquisition the mark names takes a field it finds in N for a grant (reply -3) or gives it
-- back in its give-up; any other finding of one's own field in N (another acquisition of the
-- same owner, a late copy of an attempt or a give-up) is what it is without grants: a hold.
-- The grantee's extension, and any release or re-entry of the field, ends the mark.
--
-- Grant mode's own keys are read and written through grant_call(): a key of another type
-- there (someone else's data under a redisync name) makes grant mode step aside for the lock
-- (no registration, no grant: waiters are woken as in wake mode) and never fails an acquire or
-- a release. (SET and DEL of the mark work on a key of any type.)
local function grant_call(...)
  local reply = redis.pcall(...)
  if type(reply) == 'table' and reply.err then
    return false
  end
  return reply
end
-- grant_now(): the server's clock in epoch ms (registration deadlines are server times).
local function grant_now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- The keys of grant mode, in one table: `registrations` (sorted set, member = field, score =
-- when its acquisition first registered: the order grants are made in), `ids` (hash, field ->
-- "<id>:<attempt>:<deadline>"; nil for FairLock, whose registration holds them), `mark` (the
-- grant mark), `channel` (the grant channel prefix), `token` (FencedLock's counter, else nil),
-- `readers` (a read-write lock's "redisync_rwlock_readers:TAG(N)", else nil: present while a
-- redisync reader waits, see grant_candidate()).
local function grant_keys(registrations, ids, mark, channel, token, readers)
  return {registrations = registrations, ids = ids, mark = mark, channel = channel,
          token = token, readers = readers}
end
-- True when the grant mark names `field` and the acquisition `id` ("" never matches).
local function grant_marked(g, field, id)
  return id ~= '' and grant_call('get', g.mark) == field .. ' ' .. id
end
-- Ends the grant mark when it names `field` (its hold was released, re-entered or extended).
local function grant_unmark(g, field)
  local mark = grant_call('get', g.mark)
  if mark and string.sub(mark, 1, #field + 1) == field .. ' ' then
    redis.call('del', g.mark)
  end
end
-- While a grant of `field`'s hold to another acquisition of the same owner is not taken yet
-- (the mark names `field` with another id): the ms until it is taken or lapses (the mark's
-- PTTL, at least 1); else false. An acquisition of the owner that does not hold the lock in
-- its client (its `id` is its own, never "") waits that long instead of re-entering: a
-- re-entry would make the hold more than the grant, and the grantee, taking it by an attempt,
-- would then re-enter too (one hold more on the server than the owner counts). An acquisition
-- whose client holds the lock already sends id "" and re-enters at once.
local function grant_pending_for_another(g, field, id)
  if id == '' then
    return false
  end
  local mark = grant_call('get', g.mark)
  if mark and string.sub(mark, 1, #field + 1) == field .. ' ' and mark ~= field .. ' ' .. id then
    return math.max(1, redis.call('pttl', g.mark))
  end
  return false
end
-- grant_register(g, field, period, id, attempt): registers the acquisition `id` of `field` for a
-- grant until `period` ms from now (period 0: not at all), and keeps the keys at least that
-- long. Its place in the order is its first registration's (ZADD NX): a refresh does not move
-- it back, so waiters are granted the lock in the order they began to wait.
local function grant_register(g, field, period, id, attempt)
  period = tonumber(period)
  if period > 0 and id ~= '' then
    local now = grant_now()
    if grant_call('zadd', g.registrations, 'NX', now, field) and
        grant_call('hset', g.ids, field, id .. ':' .. attempt .. ':' .. (now + period)) then
      if redis.call('pttl', g.registrations) < period then
        redis.call('pexpire', g.registrations, period)
      end
      if redis.call('pttl', g.ids) < period then
        redis.call('pexpire', g.ids, period)
      end
    end
  end
end
-- Removes the registration of `field` when it is the acquisition `id`'s (another acquisition of
-- the same owner keeps its own).
local function grant_deregister(g, field, id)
  if id == '' then
    return
  end
  local registered = grant_call('hget', g.ids, field)
  if registered and string.sub(registered, 1, #id + 1) == id .. ':' then
    grant_call('zrem', g.registrations, field)
    grant_call('hdel', g.ids, field)
  end
end
-- The grant channel of the client that owns `field` ("<client id>:<thread id>", or a
-- read-write lock's writer field "<client id>:<thread id>:write").
local function grantee_channel(grant_channel, field)
  local client = string.match(field, '^(.+):[^:]*:write$') or string.match(field, '^(.+):[^:]*$')
  return grant_channel .. ':' .. (client or field)
end
-- The ms left of a waiting redisync reader's turn (the readers key of a read-write lock),
-- or false when none waits. A key without expiry or with more left than the largest grant
-- lease (60 s) was not set by a reader (rwlock_read_acquire.lua): it is ignored, or it would
-- keep writers out for good.
local function readers_waiting(g)
  if not g.readers then
    return false
  end
  local ttl = grant_call('pttl', g.readers)
  return ttl ~= false and ttl > 0 and ttl <= 60000 and ttl
end
-- The waiter a release that frees the lock now would grant it to, read only: the first live
-- registration in order among the first eight, as {field, id, attempt, stale}, where `stale`
-- lists the registrations before it whose deadline passed (or that have no id); {stale} with
-- no field when none of the eight is live. A read-write lock whose readers key exists (a
-- redisync reader was refused by a write hold and still waits): {stale, readers = true}, no
-- field. Readers are not granted, they are woken: without this, registered writers handed the
-- lock to each other for as long as any of them waited, and a reader never got in.
local function grant_candidate(g)
  local candidate = {stale = {}}
  if readers_waiting(g) then
    candidate.readers = true
    return candidate
  end
  local firsts = grant_call('zrange', g.registrations, 0, 7)
  if not firsts or #firsts == 0 then
    return candidate
  end
  local registered = grant_call('hmget', g.ids, unpack(firsts)) or {}
  local now = grant_now()
  for i, field in ipairs(firsts) do
    local id, attempt, deadline = string.match(registered[i] or '', '^(%x+):(%d+):(%d+)$')
    if id and tonumber(deadline) > now then
      candidate.field, candidate.id, candidate.attempt = field, id, attempt
      return candidate
    end
    candidate.stale[#candidate.stale + 1] = field
  end
  return candidate
end
-- Gives the freed lock `lock` to `field`, whose registration said "<id>:<attempt>": an
-- ordinary hold (field -> 1; `rw`: also mode = write) with the short grant lease, the grant
-- mark, and the message "<field> <grant lease> <id> <attempt>[ <token>]" on the grantee's
-- client's grant channel. The lease travels with the grant: the grantee counts the releaser's
-- setting, not its own.
local function grant_to(lock, g, field, id, attempt, grant_lease, publish, rw)
  if rw then
    redis.call('hset', lock, 'mode', 'write')
  end
  redis.call('hset', lock, field, 1)
  redis.call('pexpire', lock, grant_lease)
  redis.call('set', g.mark, field .. ' ' .. id, 'px', grant_lease)
  local message = field .. ' ' .. grant_lease .. ' ' .. id .. ' ' .. attempt
  if g.token then
    message = message .. ' ' .. redis.call('incr', g.token)
  end
  redis.call(publish, grantee_channel(g.channel, field), message)
end
-- pass_on(lock, g, lock_channel, grant_lease, publish, rw_message, candidate): after the lock
-- hash was deleted, drops the stale registrations ahead of the candidate, gives the lock to the
-- candidate (grant_to) and returns its field. With none it publishes Redisson's message on the
-- lock channel exactly as a plain release ("0"; `rw_message` for a read-write lock, whose
-- grants are write holds; "1", which wakes every waiter, when readers wait) and returns false.
-- `candidate`: grant_candidate()'s answer taken earlier in the same script (it cannot have
-- changed), or nil to look it up here.
local function pass_on(lock, g, lock_channel, grant_lease, publish, rw_message, candidate)
  candidate = candidate or grant_candidate(g)
  for _, field in ipairs(candidate.stale) do
    grant_call('zrem', g.registrations, field)
    grant_call('hdel', g.ids, field)
  end
  if candidate.field then
    grant_call('zrem', g.registrations, candidate.field)
    grant_call('hdel', g.ids, candidate.field)
    grant_to(lock, g, candidate.field, candidate.id, candidate.attempt, grant_lease, publish,
             rw_message ~= nil)
    return candidate.field
  end
  redis.call(publish, lock_channel, candidate.readers and '1' or rw_message or '0')
  return false
end
-- The ACL check of a script that may publish on the lock channel or, when a live registration
-- exists, on the grant channel of the earliest one (see publish_check.lua). Reads only.
-- g nil (a read-write lock release in wake mode): the lock channel alone. `candidate` (a
-- script whose only publish is pass_on's, given grant_candidate()'s answer): only the one
-- channel pass_on will publish on.
local function grant_publish_refused(publish, lock_channel, g, candidate)
  if redis.acl_check_cmd then
    local channels = {lock_channel}
    if candidate ~= nil then
      channels = {candidate.field and grantee_channel(g.channel, candidate.field) or lock_channel}
    elseif g then
      local first = grant_candidate(g).field
      if first then
        table.insert(channels, grantee_channel(g.channel, first))
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
