-- SPDX-License-Identifier: Apache-2.0
-- Shared sub-step "may this user publish?" (docs/safety.md "ACL users"). Not a script on its
-- own: the scripts that write and then publish require it (`--@requires publish_check`: this
-- text goes in front of theirs) and call publish_refused(command, channel) before their first
-- write, so a user without the channel right changes nothing instead of having the write done and
-- the script aborted at the publish, its waiters never woken.
-- Returns the error reply to return when the user may not publish, else nil. Redis 6 has no
-- redis.acl_check_cmd: nil there (the old order remains).
local function publish_refused(command, channel)
  if redis.acl_check_cmd and not redis.acl_check_cmd(command, channel, '0') then
    return redis.error_reply('NOPERM this user may not ' .. command .. ' to channel ' ..
      channel .. ' (redisync wakes waiters with it; grant it with ACL SETUSER <user>' ..
      ' &<channel pattern>); nothing was changed')
  end
  return nil
end
