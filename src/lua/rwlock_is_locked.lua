-- SPDX-License-Identifier: Apache-2.0
-- Read-write lock "is locked" queries (docs/wire-format.md §5.6), atomically.
-- KEYS[1] lock hash N; ARGV[1] "read" or "write".
-- read: mode = read, or mode = write with more than two fields (the writer also reads);
-- write: mode = write. Returns 1 or 0.
local mode = redis.call('hget', KEYS[1], 'mode')
if ARGV[1] == 'write' then
  return mode == 'write' and 1 or 0
end
if mode == 'read' or (mode == 'write' and redis.call('hlen', KEYS[1]) > 2) then
  return 1
end
return 0
