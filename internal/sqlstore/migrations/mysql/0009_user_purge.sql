-- Account deletion. A deleted user's row stays, marked by deleted_at, until
-- the purge has removed everything of theirs: every read of users skips
-- it, so the user is gone for the API at once, and the row blocks a
-- re-creation of the id until the purge is done.
ALTER TABLE users ADD COLUMN deleted_at BIGINT NULL;

-- One row per user whose deletion was asked: the durable job the work role
-- runs in batches (sqlstore/purge.go). A worker owns a job while
-- lease_until (unix ms) is in the future and renews it with every batch;
-- a worker that died loses it when the lease runs out, and another resumes
-- where it stopped (every batch is a transaction, and finding what is left
-- is the only state). The row outlives the purge: it says the purge is
-- done, and token_generation, the user's generation after the deletion,
-- is where a user later created with the same id starts, so that no token
-- of the deleted user works for them.
CREATE TABLE IF NOT EXISTS user_purges (
    user_id           BIGINT      NOT NULL,
    requested_at      BIGINT      NOT NULL,
    finished_at       BIGINT      NULL,
    token_generation  BIGINT      NOT NULL,
    lease_owner       VARCHAR(64) NOT NULL DEFAULT '',
    lease_until       BIGINT      NOT NULL DEFAULT 0,
    batches           BIGINT      NOT NULL DEFAULT 0,
    following_removed BIGINT      NOT NULL DEFAULT 0,
    followers_removed BIGINT      NOT NULL DEFAULT 0,
    likes_removed     BIGINT      NOT NULL DEFAULT 0,
    posts_removed     BIGINT      NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id),
    KEY user_purges_open (finished_at, lease_until)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
