-- kv_compare_expire.lua: CompareAndExpire. Resets a key's ttl if its value
-- is the one given: a lock is extended only by its owner.
--
-- KEYS[1] the key. ARGV[1] the expected value; ARGV[2] the ttl in ms, 0
-- or less for none. Returns 1 if it reset the ttl, else 0.
--
-- A script because the GET and the PEXPIRE must be one step: between two
-- commands the lock could expire and be taken by someone else.

if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if tonumber(ARGV[2]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
else
  redis.call('PERSIST', KEYS[1])
end
return 1
