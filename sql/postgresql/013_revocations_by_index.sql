-- The revocation feed's pruning (009) is one index range scan again. With LIMIT and no order
-- PostgreSQL's planner chose to scan auth_token_revocations whole for the first 100 rows older
-- than an hour (it cannot tell how many there are), and the table holds every change of the
-- last hour: two a first BVN verification, one an identity record loaded. Each change paid
-- for a read of all of them. Ordered by revoked_at, the query follows the index on it and
-- stops at the first row that is not old enough. (The processes' reads of the feed are
-- ordered by xid for the same reason: bank_sql.c, feed_since.) Additions only (no
-- `requires`): the 12 module serves on this schema, and gains the same.
CREATE OR REPLACE FUNCTION auth_token_revocations_prune() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF pg_try_advisory_xact_lock(hashtext('auth_token_revocations_prune')) THEN
        DELETE FROM auth_token_revocations WHERE seq IN (
            SELECT seq FROM auth_token_revocations
             WHERE revoked_at < now() - interval '1 hour' ORDER BY revoked_at LIMIT 100);
    END IF;
END
$$;
