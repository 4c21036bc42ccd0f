-- Every statement that writes outbox events also sends a notification on
-- the channel feedd_outbox, which the relays LISTEN on: they relay a post
-- as its transaction commits instead of at their next poll. PostgreSQL
-- delivers a notification only at commit (never for a rolled-back
-- transaction) and sends identical ones of a transaction once, so a
-- transaction costs one notification however many events it writes. The
-- payload is empty: the relay claims whatever waits, as its poll does.
-- The function body stays on one line: migrations split at a semicolon
-- that ends a line.
CREATE OR REPLACE FUNCTION feedd_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN PERFORM pg_notify('feedd_outbox', ''); RETURN NULL; END$$;

DROP TRIGGER IF EXISTS outbox_notify ON outbox;

CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION feedd_outbox_notify();
