-- likes_finish.lua: FinishLike. Clears a change's journal entry, if the
-- entry is still that change's (a newer change keeps its own).
--
-- KEYS[1] the user's journal. ARGV[1] the post's member; ARGV[2] the
-- version. Returns 1 if it cleared, else 0.
--
-- A script because the compare and the delete must be one step.

local j = redis.call('HGET', KEYS[1], ARGV[1])
if j and tonumber(j) == tonumber(ARGV[2]) then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 1
end
return 0
