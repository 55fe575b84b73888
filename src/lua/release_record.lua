-- SPDX-License-Identifier: Apache-2.0
-- Shared sub-steps of the lock release scripts (docs/wire-format.md §1.8). Not a script on its
-- own: lock_release.lua, lock_grant_release.lua, fair_lock_release.lua and the read-write
-- lock's releases are sent with this text in front (their `--@requires`).
-- Every outcome of a release is recorded in its release record, "not the owner" (nil) as -1:
-- a second copy of the call (a resend, or a first copy arriving late) reads the record first
-- and answers what the first did, changing nothing.
-- record_outcome(record, outcome, expiry): records `outcome` (nil as -1) for `expiry` ms and
-- returns it.
local function record_outcome(record, outcome, expiry)
  redis.call('set', record, outcome or -1, 'px', expiry)
  return outcome
end
-- answered_early(refused, record): the reply of a release answered before it reads the lock:
-- `refused` (the publish-right check's error reply; nil when allowed), else the outcome a
-- copy of this release recorded (-1 for nil). false: not answered, go on.
local function answered_early(refused, record)
  if refused then
    return refused
  end
  local recorded = redis.call('get', record)
  if recorded ~= false then
    return tonumber(recorded)
  end
  return false
end
-- rw_release_start(refused, lock, channel, message, publish, record, expiry, only): the start
-- of a read-write lock release (§5.3, §5.5): answered_early; then, when the lock has no mode
-- (it is gone), publishes `message` as Redisson does and records nil; when `only` is given
-- and the mode is another, records nil. Returns the reply, or false and the lock's mode when
-- the release goes on.
local function rw_release_start(refused, lock, channel, message, publish, record, expiry, only)
  local early = answered_early(refused, record)
  if early ~= false then
    return early
  end
  local mode = redis.call('hget', lock, 'mode')
  if mode == false then
    redis.call(publish, channel, message)
    return record_outcome(record, nil, expiry)
  end
  if only and mode ~= only then
    return record_outcome(record, nil, expiry)
  end
  return false, mode
end
-- drop_hold(lock, field, lease, record, expiry): one release of the reentrant hold `field` of
-- the hash `lock`. Not the owner: records and returns nil. More than one hold: drops one,
-- keeps the key's expiry at least `lease` ms (never shortens it, issue 22), records and
-- returns 0. The last hold: returns false with nothing changed or recorded yet (the caller
-- frees the lock its own way, then records 1). `lease` "0" says the caller holds nothing
-- more (redisync counts its holds, and none is on its way): its field goes whatever its
-- count, which includes holds of acquires whose replies the caller never read.
local function drop_hold(lock, field, lease, record, expiry)
  -- One HGET instead of HEXISTS + HINCRBY on the common path (the last hold).
  local held = redis.call('hget', lock, field)
  if held == false then
    return record_outcome(record, nil, expiry)
  end
  if tonumber(held) > 1 and tonumber(lease) > 0 then
    redis.call('hincrby', lock, field, -1)
    if redis.call('pttl', lock) < tonumber(lease) then redis.call('pexpire', lock, lease) end
    return record_outcome(record, 0, expiry)
  end
  return false
end
-- release_hold(refused, lock, field, lease, record, expiry): answered_early, then drop_hold
-- (the start of a reentrant hash's release). The reply, or false when the caller's last hold
-- is to be freed.
local function release_hold(refused, lock, field, lease, record, expiry)
  local early = answered_early(refused, record)
  if early ~= false then
    return early
  end
  return drop_hold(lock, field, lease, record, expiry)
end
