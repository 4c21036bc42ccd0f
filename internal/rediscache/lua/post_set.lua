-- post_set.lua: CachePosts, for one post. Stores a post's record unless
-- the key holds a newer version of the post (feed.Post.Version): a reader
-- that read a post from SQL before an edit or a delete committed, and
-- fills the cache after the edit wrote its version, must not put the old
-- copy back.
--
-- KEYS[1] the post's key. ARGV[1] the record (post.go); ARGV[2] its
-- version; ARGV[3] the ttl in ms, 0 for none. Returns 1 if it stored the
-- record, 0 if the cached one is newer.
--
-- A script because the read of the cached version and the write must be
-- one step. The cached record's version is read where post.go puts it: a
-- tombstone (flag 1) is 2^53; a record of format 2 to 6 with flag 2
-- (edited) has it as 8 big-endian bytes after the flags; any other
-- record, also one that does not decode, is 0 and always replaced.

local cur = redis.call('GET', KEYS[1])
if cur then
  local flags = string.byte(cur, 2) or 0
  local v = 0
  if flags % 2 == 1 then
    v = 9007199254740992
  elseif (string.byte(cur, 1) or 0) >= 2 and (string.byte(cur, 1) or 0) <= 6 and math.floor(flags / 2) % 2 == 1 and #cur >= 10 then
    for i = 3, 10 do
      v = v * 256 + string.byte(cur, i)
    end
  end
  if v > tonumber(ARGV[2]) then
    return 0
  end
end
if tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
else
  redis.call('SET', KEYS[1], ARGV[1])
end
return 1
