-- Payment notices moved out of the database (`bankctl notices archive`, docs/operations.md,
-- "A year of operation") leave their key here: the webhook's insert skips a notice whose key
-- is listed (bank_store_notice.c, NOTICE_INSERT), so a partner's repeat of an archived
-- notice is still answered as a duplicate and stored nothing. About 60 bytes a notice where
-- the notice took a kilobyte or more. `bankctl notices restore` puts the rows back and
-- removes their keys. Additions only (no `requires`): a module built for an older schema
-- serves on this one, but does not look here, so archive only once every server runs this
-- release or later (docs/deployment.md, "Upgrades").
CREATE TABLE IF NOT EXISTS payment_notices_archived (
    partner               text NOT NULL,
    transaction_reference text NOT NULL,
    status_code           text NOT NULL,
    archived_at           timestamptz NOT NULL,
    PRIMARY KEY (partner, transaction_reference, status_code)
);

-- A token deleted long after it expired is not announced on the revocation feed (008):
-- every process refuses an expired token by itself, kept or not, so `bankctl token prune`
-- (docs/operations.md, "A year of operation") removes a million of them without a million
-- feed rows for every process to read. An hour's margin covers clocks that disagree.
DROP TRIGGER IF EXISTS auth_access_tokens_revoked ON auth_access_tokens;
CREATE TRIGGER auth_access_tokens_revoked AFTER DELETE ON auth_access_tokens
    FOR EACH ROW WHEN (OLD.expires_at IS NULL OR OLD.expires_at > now() - interval '1 hour')
    EXECUTE FUNCTION auth_access_tokens_revoked();
CREATE INDEX IF NOT EXISTS auth_access_tokens_expires ON auth_access_tokens (expires_at);

-- The notices in (received_at, id) order, for bankctl notices archive's pages and windows
-- (row values both drivers bound by this index, however many notices share one time), in
-- place of the index on received_at alone (001), which it also serves. On a large table,
-- build it before the migration (docs/deployment.md, "Upgrades"): the migration then finds it.
CREATE INDEX IF NOT EXISTS payment_notices_received_id ON payment_notices (received_at, id);
DROP INDEX IF EXISTS payment_notices_received;
