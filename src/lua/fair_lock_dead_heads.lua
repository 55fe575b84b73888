-- Fair lock shared sub-step "drop dead heads" (wire spec §4.2). Not a script on its own: the
-- fair lock's acquire, release and force-release scripts are sent with this text in front.
-- Repeatedly: if the queue head's deadline (its score in the timeout set) is <= now, remove it
-- from both; stop at the first head that is not expired (or has no score) or an empty queue.
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
