-- A list member's rows, by member: an account's purge takes the user out
-- of other users' lists (on every shard, where the lists' owners live) and
-- moves their member counts.
CREATE INDEX IF NOT EXISTS list_members_by_member ON list_members (member_id);
