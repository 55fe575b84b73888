-- SPDX-License-Identifier: Apache-2.0
-- Shared sub-step of the "try set" scripts of the semaphore (docs/wire-format.md §7), the
-- permit-expirable semaphore (§8) and the count-down latch (§9). Not a script on its own: it
-- is sent after publish_check.lua and in front of them (their `--@requires`).
-- As Redisson's trySetPermits / trySetCount: sets `key` to `count` only when it is absent,
-- then publishes `message` on `channel` with `command` (PUBLISH or SPUBLISH). `px`: an expiry
-- in ms, nil or "0" for none. Returns 1 when set, 0 when the key exists (nothing changed), or
-- publish_refused's error reply when the user may not publish (checked before the write).
local function set_count_if_absent(command, key, count, channel, message, px)
  if redis.call('exists', key) == 1 then
    return 0
  end
  local refused = publish_refused(command, channel)
  if refused then
    return refused
  end
  if px ~= nil and tonumber(px) > 0 then
    redis.call('set', key, count, 'px', px)
  else
    redis.call('set', key, count)
  end
  redis.call(command, channel, message)
  return 1
end
