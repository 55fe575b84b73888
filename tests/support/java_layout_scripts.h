// SPDX-License-Identifier: Apache-2.0
// The Lua of the Redisson-layout test client (java_layout.cpp): one script per atomic step,
// written from the prose of /work/shared/spec/wire-format.md (sections named beside each).
// Test support only; redisync's own scripts are src/lua/*.lua.
#pragma once

namespace redisync::test::java_scripts {

// §2.2, §10, §12. KEYS: hash. ARGV: lease, owner, "1" = refuse re-entry.
inline constexpr const char* kLockAcquire = R"lua(
local mine = redis.call('hexists', KEYS[1], ARGV[2]) == 1
if mine and ARGV[3] == '1' then
  return redis.error_reply('NON_REENTRANT_REACQUIRE: ' .. ARGV[2] .. ' already holds it')
end
if not mine and redis.call('exists', KEYS[1]) == 1 then
  return redis.call('pttl', KEYS[1])
end
redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
return nil
)lua";

// §11. KEYS: hash, token counter. ARGV: lease, owner.
inline constexpr const char* kFencedAcquire = R"lua(
if redis.call('exists', KEYS[1]) == 1 and redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return {redis.call('pttl', KEYS[1]), -1}
end
local token = redis.call('incr', KEYS[2])
redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
return {-1, token}
)lua";

// §2.3 (and §10 without the message). KEYS: hash, channel, record.
// ARGV: owner, lease for the holds left, record ttl, "1" = publish, publish command.
inline constexpr const char* kLockRelease = R"lua(
local earlier = redis.call('get', KEYS[3])
if earlier then return tonumber(earlier) end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end
local outcome = 1
if redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  outcome = 0
else
  redis.call('del', KEYS[1])
  if ARGV[4] == '1' then redis.call(ARGV[5], KEYS[2], '0') end
end
redis.call('set', KEYS[3], outcome, 'px', ARGV[3])
return outcome
)lua";

// §4.2, prepended to the fair lock steps: expired heads leave the queue and the set.
inline constexpr const char* kFairPurge = R"lua(
local function purge_expired_heads(queue, deadlines, now)
  for _ = 1, redis.call('llen', queue) do
    local head = redis.call('lindex', queue, 0)
    local due = redis.call('zscore', deadlines, head)
    if not due or tonumber(due) > now then return end
    redis.call('lpop', queue)
    redis.call('zrem', deadlines, head)
  end
end
)lua";

// §4.3 / §4.4 / §12. KEYS: hash, queue, deadlines.
// ARGV: lease, owner, allowance, now, "1" = queue, "1" = refuse re-entry.
inline constexpr const char* kFairAcquire = R"lua(
local owner, allowance, now = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
if ARGV[6] == '1' and redis.call('hexists', KEYS[1], owner) == 1 then
  return redis.error_reply('NON_REENTRANT_REACQUIRE: ' .. owner .. ' already holds it')
end
purge_expired_heads(KEYS[2], KEYS[3], now)
local head = redis.call('lindex', KEYS[2], 0)
if redis.call('exists', KEYS[1]) == 0 and (not head or head == owner) then
  if head then redis.call('lpop', KEYS[2]) end
  redis.call('zrem', KEYS[3], owner)
  for _, other in ipairs(redis.call('zrange', KEYS[3], 0, -1)) do
    redis.call('zincrby', KEYS[3], -allowance, other)
  end
  redis.call('hset', KEYS[1], owner, 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], owner) == 1 then
  redis.call('hincrby', KEYS[1], owner, 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if ARGV[5] ~= '1' then return 1 end
if redis.call('zscore', KEYS[3], owner) then
  return math.max(0, redis.call('pttl', KEYS[1]))
end
local tail = redis.call('lindex', KEYS[2], -1)
local tail_due = tail and tail ~= owner and redis.call('zscore', KEYS[3], tail)
local base
if tail_due then base = tonumber(tail_due) - now else base = redis.call('pttl', KEYS[1]) end
if redis.call('zadd', KEYS[3], base + allowance + now, owner) == 1 then
  redis.call('rpush', KEYS[2], owner)
end
return base
)lua";

// §4.6. KEYS: hash, queue, deadlines, channel prefix, record.
// ARGV: owner, lease for the holds left, now, record ttl, publish command.
inline constexpr const char* kFairRelease = R"lua(
local earlier = redis.call('get', KEYS[5])
if earlier then return tonumber(earlier) end
purge_expired_heads(KEYS[2], KEYS[3], tonumber(ARGV[3]))
local function wake_head()
  local head = redis.call('lindex', KEYS[2], 0)
  if head then redis.call(ARGV[5], KEYS[4] .. ':' .. head, '0') end
end
if redis.call('exists', KEYS[1]) == 0 then
  wake_head()
  redis.call('set', KEYS[5], 1, 'px', ARGV[4])
  return 1
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end
if redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[5], 0, 'px', ARGV[4])
  return 0
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[4])
wake_head()
return 1
)lua";

// §4.5. KEYS: queue, deadlines. ARGV: owner, allowance.
inline constexpr const char* kFairGiveUp = R"lua(
local seen = false
for _, waiter in ipairs(redis.call('lrange', KEYS[1], 0, -1)) do
  if seen and redis.call('zscore', KEYS[2], waiter) then
    redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), waiter)
  end
  if waiter == ARGV[1] then seen = true end
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
return nil
)lua";

// §5.2. KEYS: hash, this reader's marker prefix. ARGV: lease, reader field, writer field.
inline constexpr const char* kReadAcquire = R"lua(
local mode = redis.call('hget', KEYS[1], 'mode')
local lease = tonumber(ARGV[1])
if not mode then
  redis.call('hset', KEYS[1], 'mode', 'read', ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':1', 1, 'px', lease)
  redis.call('pexpire', KEYS[1], lease)
  return nil
end
local shared = mode == 'read' or redis.call('hexists', KEYS[1], ARGV[3]) == 1
if not shared then return redis.call('pttl', KEYS[1]) end
local k = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('set', KEYS[2] .. ':' .. k, 1, 'px', lease)
if redis.call('pttl', KEYS[1]) < lease then redis.call('pexpire', KEYS[1], lease) end
return nil
)lua";

// §5.3. KEYS: hash, channel, TAG(N), record. ARGV: reader field, record ttl, publish command.
inline constexpr const char* kReadRelease = R"lua(
local earlier = redis.call('get', KEYS[4])
if earlier then return tonumber(earlier) end
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
  redis.call(ARGV[3], KEYS[2], '0')
  redis.call('set', KEYS[4], 1, 'px', ARGV[2])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end
local left = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if left == 0 then redis.call('hdel', KEYS[1], ARGV[1]) end
redis.call('del', KEYS[3] .. ':' .. ARGV[1] .. ':rwlock_timeout:' .. (left + 1))
if redis.call('hlen', KEYS[1]) > 1 then
  local longest = 0
  local flat = redis.call('hgetall', KEYS[1])
  for i = 1, #flat, 2 do
    local holds = tonumber(flat[i + 1])
    for k = 1, holds or 0 do
      local ttl = redis.call('pttl', KEYS[3] .. ':' .. flat[i] .. ':rwlock_timeout:' .. k)
      if ttl > longest then longest = ttl end
    end
  end
  if longest > 0 or mode == 'write' then
    if longest > 0 then redis.call('pexpire', KEYS[1], longest) end
    redis.call('set', KEYS[4], 0, 'px', ARGV[2])
    return 0
  end
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], '0')
redis.call('set', KEYS[4], 1, 'px', ARGV[2])
return 1
)lua";

// §5.4. KEYS: hash. ARGV: lease, writer field.
inline constexpr const char* kWriteAcquire = R"lua(
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
  redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], redis.call('pttl', KEYS[1]) + tonumber(ARGV[1]))
  return nil
end
return redis.call('pttl', KEYS[1])
)lua";

// §5.5. KEYS: hash, channel, record. ARGV: writer field, lease for holds left, record ttl,
// publish command.
inline constexpr const char* kWriteRelease = R"lua(
local earlier = redis.call('get', KEYS[3])
if earlier then return tonumber(earlier) end
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
  redis.call(ARGV[4], KEYS[2], '1')
  redis.call('set', KEYS[3], 1, 'px', ARGV[3])
  return nil
end
if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end
if redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[3])
  return 0
end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
  redis.call(ARGV[4], KEYS[2], '1')
else
  redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call('set', KEYS[3], 1, 'px', ARGV[3])
return 1
)lua";

// §7 try acquire. KEYS: counter. ARGV: n.
inline constexpr const char* kSemaphoreTryAcquire = R"lua(
local have = tonumber(redis.call('get', KEYS[1]) or '-1')
if have < tonumber(ARGV[1]) then return 0 end
redis.call('decrby', KEYS[1], ARGV[1])
return 1
)lua";

// §7 release. KEYS: counter, channel. ARGV: n, publish command.
inline constexpr const char* kSemaphoreRelease = R"lua(
local now_available = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], now_available)
return now_available
)lua";

// §7 / §8 try set permits. KEYS: counter, channel. ARGV: n, publish command.
inline constexpr const char* kTrySetPermits = R"lua(
if redis.call('exists', KEYS[1]) == 1 then return 0 end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], ARGV[1])
return 1
)lua";

// §8 reclaim, prepended to the permit steps. KEYS: counter, deadlines, channel.
// ARGV[1] now, ARGV[2] publish command.
inline constexpr const char* kPermitReclaim = R"lua(
local function reclaim_expired(limit)
  local due
  if limit then
    due = redis.call('zrangebyscore', KEYS[2], '-inf', ARGV[1], 'limit', 0, limit)
  else
    due = redis.call('zrangebyscore', KEYS[2], '-inf', ARGV[1])
  end
  for _, id in ipairs(due) do redis.call('zrem', KEYS[2], id) end
  if #due == 0 then return end
  local available = redis.call('incrby', KEYS[1], #due)
  if available > 0 then redis.call(ARGV[2], KEYS[3], available) end
end
)lua";

// §8 acquire one permit. ARGV[3] deadline score, ARGV[4] id.
inline constexpr const char* kPermitAcquire = R"lua(
reclaim_expired(1)
if tonumber(redis.call('get', KEYS[1]) or '0') >= 1 then
  redis.call('decrby', KEYS[1], 1)
  redis.call('zadd', KEYS[2], ARGV[3], ARGV[4])
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then redis.call('pexpire', KEYS[2], ttl) end
  return redis.status_reply('OK')
end
local earliest = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if earliest[2] and tonumber(earliest[2]) ~= 922337203685477 then
  return ':' .. earliest[2]
end
return nil
)lua";

// §8 release one id. ARGV[3] id.
inline constexpr const char* kPermitRelease = R"lua(
local due = redis.call('zscore', KEYS[2], ARGV[3])
if not due then return 0 end
redis.call('zrem', KEYS[2], ARGV[3])
redis.call(ARGV[2], KEYS[3], redis.call('incrby', KEYS[1], 1))
if tonumber(due) <= tonumber(ARGV[1]) then return 0 end
return 1
)lua";

// §8 update lease of id to D'. ARGV[3] id, ARGV[4] new deadline score. 1 when the id is held.
inline constexpr const char* kPermitUpdateLease = R"lua(
reclaim_expired(nil)
if not redis.call('zscore', KEYS[2], ARGV[3]) then return 0 end
redis.call('zadd', KEYS[2], ARGV[4], ARGV[3])
return 1
)lua";

// §17 shared parts, prepended to the rate limiter steps. KEYS: hash, value, permits (one
// type's). ARGV[1] the client's now (ms).
inline constexpr const char* kRateShared = R"lua(
local rate = tonumber(redis.call('hget', KEYS[1], 'rate'))
local interval = tonumber(redis.call('hget', KEYS[1], 'interval'))
if rate == nil or interval == nil or not redis.call('hget', KEYS[1], 'type') then
  return redis.error_reply('RateLimiter is not initialized')
end
local now = tonumber(ARGV[1])
local function permits_of(members)
  local total = 0
  for _, m in ipairs(members) do
    local _, n = struct.unpack('Bc0I', m)
    total = total + n
  end
  return total
end
-- Removes the grants that left the window; returns their permits.
local function drop_expired()
  local gone = redis.call('zrangebyscore', KEYS[3], '-inf', now - interval)
  if #gone > 0 then redis.call('zremrangebyscore', KEYS[3], '-inf', now - interval) end
  return permits_of(gone)
end
)lua";

// §17.3 acquire (expiry rule 5 left out: the tests' configurations have no TTLs).
// ARGV[2] permits p, ARGV[3] a 16-byte grant id. nil = acquired, else ms to wait.
inline constexpr const char* kRateAcquire = R"lua(
local p = tonumber(ARGV[2])
if p > rate then return redis.error_reply('Requested permits amount could not exceed defined rate') end
local member = struct.pack('Bc0I', string.len(ARGV[3]), ARGV[3], p)
local value = redis.call('get', KEYS[2])
if not value then
  redis.call('set', KEYS[2], rate)
  redis.call('zadd', KEYS[3], now, member)
  redis.call('decrby', KEYS[2], p)
  return nil
end
local back = drop_expired()
if back > 0 then
  value = tonumber(value) + back
  if value > rate then value = rate - permits_of(redis.call('zrange', KEYS[3], 0, -1)) end
  redis.call('set', KEYS[2], value)
end
if tonumber(value) < p then
  local oldest = redis.call('zrange', KEYS[3], 0, 0, 'withscores')
  return 3 + interval - (now - tonumber(oldest[2]))
end
redis.call('zadd', KEYS[3], now, member)
redis.call('decrby', KEYS[2], p)
return nil
)lua";

// §17.4 release: p back to the value, bounded by the rate (the grant stays in the window).
// ARGV[2] p. Returns the value.
inline constexpr const char* kRateRelease = R"lua(
local value = tonumber(redis.call('get', KEYS[2]) or rate) + tonumber(ARGV[2])
if value > rate then value = rate end
redis.call('set', KEYS[2], value)
return value
)lua";

// §17.4 available, as Redisson 4.x's availablePermits runs it: the expired grants' permits go
// back to the value without step 3's cap (issue 36 item 7), so after a release (which leaves
// its grant in the window) the value can end above the rate.
inline constexpr const char* kRateAvailableUncapped = R"lua(
local value = redis.call('get', KEYS[2])
if not value then return rate end
local back = drop_expired()
if back > 0 then return redis.call('incrby', KEYS[2], back) end
return tonumber(value)
)lua";

// §9 try set count. KEYS: count, channel. ARGV: count, publish command.
inline constexpr const char* kLatchTrySetCount = R"lua(
if redis.call('exists', KEYS[1]) == 1 then return 0 end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], '1')
return 1
)lua";

// §9 count down. KEYS: count, channel. ARGV: publish command.
inline constexpr const char* kLatchCountDown = R"lua(
local left = redis.call('decr', KEYS[1])
if left <= 0 then redis.call('del', KEYS[1]) end
if left == 0 then redis.call(ARGV[1], KEYS[2], '0') end
return left
)lua";

}  // namespace redisync::test::java_scripts
