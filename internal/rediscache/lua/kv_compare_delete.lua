-- kv_compare_delete.lua: CompareAndDelete. Deletes a key if its value is
-- the one given: a lock is released only by its owner.
--
-- KEYS[1] the key. ARGV[1] the expected value. Returns 1 if it deleted
-- the key, else 0.
--
-- A script because the GET and the DEL must be one step: between two
-- commands the lock could expire and be taken by someone else.

if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
