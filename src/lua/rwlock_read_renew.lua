-- SPDX-License-Identifier: Apache-2.0
-- Batched read-lock renewal (docs/wire-format.md §5.7). Only this client's reader fields are listed, so
-- other clients' markers are never touched.
-- KEYS[i] read-write lock hash i; ARGV[1] lease ms; then, for each hash in order: its marker
-- prefix TAG(N), the number n of listed reader fields, and those n fields.
-- For every listed field that still exists with hold count v and at least one live marker
-- "<prefix>:<field>:rwlock_timeout:1..v", the markers' expiry is raised to the lease (never
-- lowered: a longer fixed lease stays); if at least one listed field of a hash was renewed, the
-- hash's expiry is raised too.
-- Returns a string of one character per listed field, in order: "1" if renewed, else "0" (the
-- field is gone, or all its markers expired while other readers kept the hash alive: the hold
-- was lost).
local result = {}
local a = 2
for _, key in ipairs(KEYS) do
  local prefix = ARGV[a]
  local n = tonumber(ARGV[a + 1])
  a = a + 2
  local any = false
  for _ = 1, n do
    local field = ARGV[a]
    a = a + 1
    local count = tonumber(redis.call('hget', key, field))
    -- The holder's own markers say whether its holds are alive: a field kept in the hash by
    -- other readers while all of this holder's markers expired is a lost hold (issue 22).
    local alive = false
    if count ~= nil then
      for k = 1, count do
        if redis.call('exists', prefix .. ':' .. field .. ':rwlock_timeout:' .. k) == 1 then
          alive = true
        end
      end
    end
    if alive then
      any = true
      for k = 1, count do
        local marker = prefix .. ':' .. field .. ':rwlock_timeout:' .. k
        if redis.call('pttl', marker) < tonumber(ARGV[1]) then redis.call('pexpire', marker, ARGV[1]) end
      end
      result[#result + 1] = '1'
    else
      result[#result + 1] = '0'
    end
  end
  if any then
    if redis.call('pttl', key) < tonumber(ARGV[1]) then redis.call('pexpire', key, ARGV[1]) end  -- never shortens (issue 22)
  end
end
return table.concat(result)
