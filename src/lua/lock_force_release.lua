-- Force release (wire spec §2.4): delete the lock whoever holds it and wake a waiter.
-- KEYS[1] lock hash; KEYS[2] channel; ARGV[1] message "0"; ARGV[2] publish command;
-- ARGV[3] "1" to publish, "0" not to (spin lock). Returns 1 if the lock existed, else 0.
if redis.call('del', KEYS[1]) == 1 then
  if ARGV[3] == '1' then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
  end
  return 1
end
return 0
