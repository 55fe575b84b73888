-- SPDX-License-Identifier: Apache-2.0
--@requires publish_check set_count_if_absent
-- Count-down latch: set the count only when N is absent (docs/wire-format.md §9).
-- KEYS[1] count string N; KEYS[2] channel "redisson_countdownlatch__channel__{N}";
-- ARGV[1] count (>= 1); ARGV[2] publish command (PUBLISH or SPUBLISH).
-- Sent with publish_check.lua and set_count_if_absent.lua in front. Returns 1 when set
-- (publishes "1": a new count, the latch is closed), 0 when N exists.
return set_count_if_absent(ARGV[2], KEYS[1], ARGV[1], KEYS[2], '1')
