-- SPDX-License-Identifier: Apache-2.0
-- The recheck and settle steps of a grant-mode acquisition (docs/wire-format.md "Direct
-- handoff"): after an attempt whose reply was lost, the owner's count in N says whether it
-- holds; the grant mark and N's expiry, read in the same step, say whether that hold is a grant
-- not taken yet (then it has the releaser's short grant lease, and the grantee must extend it).
-- Reads only.
-- KEYS[1] lock hash N; KEYS[2] grant mark "redisync_grant_mark:TAG(N)"; ARGV[1] owner field.
-- Returns {count ("" when absent), PTTL of N, grant mark ("" when absent or not a string)}.
local count = redis.call('hget', KEYS[1], ARGV[1])
local mark = redis.pcall('get', KEYS[2])  -- pcall: a key of another type is no mark
if type(mark) ~= 'string' then
  mark = ''
end
return {count or '', redis.call('pttl', KEYS[1]), mark}
