-- A user's token generation: a user token is accepted only while the
-- generation it carries (a token without one carries 0) equals this one.
-- Revoking a user's tokens adds one, so every token minted before is
-- refused and every token minted after carries the new value. A counter
-- in SQL, not a time, orders "minted before" and "minted after" exactly,
-- whatever the clocks of the processes that mint and check.
ALTER TABLE users ADD COLUMN token_generation BIGINT NOT NULL DEFAULT 0;
