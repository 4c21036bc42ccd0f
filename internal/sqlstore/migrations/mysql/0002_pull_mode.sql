-- An author's delivery state for the hybrid fan-out model: 1 while the
-- author's posts are pulled at read time instead of pushed. Only consulted
-- inside the hysteresis band below FEEDD_PULL_THRESHOLD; outside it the
-- follower count decides.
ALTER TABLE users ADD COLUMN pull_mode TINYINT NOT NULL DEFAULT 0;
