#!lua flags=allow-cross-slot-keys
-- SPDX-License-Identifier: Apache-2.0
-- Batched watchdog renewal of hashes of any slots served by one cluster node
-- (docs/wire-format.md §3.2). KEYS[1]: the first hash (it routes the call to its node);
-- ARGV[1] lease ms; ARGV[2] the prefix every owner field of the batch shares (may be empty);
-- ARGV[2i + 1], ARGV[2i + 2] (i >= 1): hash i and the rest of its owner field. The hashes are
-- passed as arguments because a call's declared keys must share one slot; the shebang flag lets
-- the script touch keys of the node's other slots (Redis 7). A hash of another node fails the
-- call ("non local key"), and the client renews that batch slot by slot instead.
-- Returns a string of one character per hash: "1" where the owner still holds hash i (its
-- expiry was reset), else "0".
local result = {}
local prefix = ARGV[2]
for i = 3, #ARGV - 1, 2 do
  local key, field = ARGV[i], prefix .. ARGV[i + 1]
  if redis.call('hexists', key, field) == 1 then
    if redis.call('pttl', key) < tonumber(ARGV[1]) then redis.call('pexpire', key, ARGV[1]) end  -- never shortens (issue 22)
    result[#result + 1] = '1'
  else
    result[#result + 1] = '0'
  end
end
return table.concat(result)
