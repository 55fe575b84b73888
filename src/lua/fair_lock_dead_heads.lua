-- SPDX-License-Identifier: Apache-2.0
-- Fair lock shared sub-step "drop dead heads" (docs/wire-format.md §4.2). Not a script on its own: the
-- fair lock's acquire, release and force-release scripts are sent with this text in front.
-- Repeatedly: if the queue head's deadline (its score in the timeout set) is <= now, remove it
-- from both; stop at the first head that is not expired (or has no score) or an empty queue.
-- Also: server_now(), the server's clock in epoch ms. Queue deadlines are absolute wall-clock
-- times (docs/wire-format.md §1.4, shared with Java clients); reading them from the server's TIME keeps one
-- clock for every redisync client, whatever their own clocks say.
local function server_now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function drop_dead_heads(queue, timeouts, now)
  while true do
    local head = redis.call('lindex', queue, 0)
    if head == false then
      return
    end
    local deadline = redis.call('zscore', timeouts, head)
    if deadline == false or tonumber(deadline) > now then
      return
    end
    redis.call('zrem', timeouts, head)
    redis.call('lpop', queue)
  end
end
-- queue_place(queue, field): the 1-based place of `field` in the queue (1: the head), or the
-- queue's length + 1 when it is not there. LPOS where the server has it (Redis 6.0.6+).
local function queue_place(queue, field)
  local at = redis.pcall('lpos', queue, field)
  if type(at) == 'number' then
    return at + 1
  end
  if type(at) ~= 'table' then  -- LPOS answered nil: not queued
    return redis.call('llen', queue) + 1
  end
  local entries = redis.call('lrange', queue, 0, -1)  -- an error reply: a server without LPOS
  for i, entry in ipairs(entries) do
    if entry == field then
      return i
    end
  end
  return #entries + 1
end
