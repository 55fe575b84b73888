-- SPDX-License-Identifier: Apache-2.0
-- Shared guard of grant mode (issue 36 item 5, docs/safety.md "ACL users"). Not a script on
-- its own: in grant mode the acquire steps are sent with publish_check.lua, publish_guard.lua
-- and this text in front (lua/publish_guard.h, with_publish_guard). A grant-mode release
-- that finds a registered waiter publishes on that waiter's client's grant channel, not on the
-- lock channel publish_guard.lua checks; a user allowed only the lock channel took the lock and
-- then could not release it (the release refuses before any write) for as long as a grant
-- waiter stayed registered. The acquire now refuses such a user before anything is written.
-- ARGV: the step's own arguments, then the grant channel to check (the caller's own: a grant
-- channel differs from another only by its client id), then what publish_guard.lua reads (the
-- publish command and the lock channel), last.
do
  local refused = publish_refused(ARGV[#ARGV - 1], ARGV[#ARGV - 2])
  if refused then
    return refused
  end
end
