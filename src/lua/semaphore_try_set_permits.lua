-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check set_count_if_absent
-- Counting semaphore: initialise the count only when N is absent (docs/wire-format.md §7).
-- KEYS[1] permits string N; KEYS[2] channel; ARGV[1] n (>= 0); ARGV[2] publish command;
-- ARGV[3] expiry in ms, or "0" for none. Sent with publish_check.lua and
-- set_count_if_absent.lua in front.
-- Returns 1 when set (and publishes n), 0 when N already exists.
return set_count_if_absent(ARGV[2], KEYS[1], ARGV[1], KEYS[2], ARGV[1], ARGV[3])
