-- SPDX-License-Identifier: Apache-2.0
-- Shared sub-step "refused, or already done?" of the recorded steps that publish (the
-- semaphore's release, the latch's count-down). Not a script on its own: those scripts are sent
-- with publish_check.lua and this text in front (their `--@requires`).
-- refused_or_recorded(command, channel, record): true and the reply to return when the user may
-- not publish (publish_refused's error, before any write) or when `record` (optional: the
-- call's record key) holds the reply a first copy of this call stored (a resend changes
-- nothing); else false.
local function refused_or_recorded(command, channel, record)
  local refused = publish_refused(command, channel)
  if refused then
    return true, refused
  end
  if record then
    local recorded = redis.call('get', record)
    if recorded ~= false then
      return true, tonumber(recorded)
    end
  end
  return false
end
