-- SPDX-License-Identifier: Apache-2.0
-- Batched watchdog renewal (docs/wire-format.md §3.2).
-- KEYS[i] lock hash i; ARGV[1] lease ms; ARGV[2] the prefix every owner field of the batch
-- shares (the Client's id and ':'; may be empty); ARGV[2 + i] the rest of the owner field for
-- KEYS[i] (the field is ARGV[2] .. ARGV[2 + i]).
-- Returns a string of one character per key: "1" where the owner still holds KEYS[i] (its
-- expiry was reset), else "0" (one reply value for the batch, not one per key).
local result = {}
local prefix = ARGV[2]
for i, key in ipairs(KEYS) do
  if redis.call('hexists', key, prefix .. ARGV[i + 2]) == 1 then
    if redis.call('pttl', key) < tonumber(ARGV[1]) then redis.call('pexpire', key, ARGV[1]) end  -- never shortens (issue 22)
    result[i] = '1'
  else
    result[i] = '0'
  end
end
return table.concat(result)
