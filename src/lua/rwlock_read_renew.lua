-- Batched read-lock renewal (wire spec §5.7). Only this client's reader fields are listed, so
-- other clients' markers are never touched.
-- KEYS[i] read-write lock hash i; ARGV[1] lease ms; then, for each hash in order: its marker
-- prefix TAG(N), the number n of listed reader fields, and those n fields.
-- For every listed field that still exists with hold count v, the expiry of its markers
-- "<prefix>:<field>:rwlock_timeout:1..v" is reset to the lease; if at least one listed field of
-- a hash existed, the hash's expiry is reset too.
-- Returns one element per listed field, in order: 1 if it existed (renewed), else 0.
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
    if count ~= nil then
      any = true
      for k = 1, count do
        redis.call('pexpire', prefix .. ':' .. field .. ':rwlock_timeout:' .. k, ARGV[1])
      end
      result[#result + 1] = 1
    else
      result[#result + 1] = 0
    end
  end
  if any then
    redis.call('pexpire', key, ARGV[1])
  end
end
return result
