-- SPDX-License-Identifier: Apache-2.0
-- Shared guard "may this user publish what its release will?" (issue 17 item 4, docs/safety.md
-- "ACL users"). Not a script on its own: the acquire steps of the kinds whose release
-- publishes are sent with publish_check.lua and this text in front (lua/publish_guard.h,
-- with_publish_guard). Their releases check the right before they write; without this
-- check a user who may write but not publish took the lock, and only its release was refused:
-- the lock then stayed taken until its lease ended, its waiters never woken.
-- ARGV: the step's own arguments, then the publish command (PUBLISH or SPUBLISH) and the
-- channel its release publishes on, last (the step itself never reads them).
-- Refuses before anything is written. One in-server ACL lookup; no round trip.
do
  local refused = publish_refused(ARGV[#ARGV - 1], ARGV[#ARGV])
  if refused then
    return refused
  end
end
