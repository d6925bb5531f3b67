-- What a verified customer's BVN answer is made of, for the BVN answer cache of every process
-- (BankBvnCacheSeconds, docs/security.md): each change to a customer's row, account or
-- BVN failure count, and each change to the identity records, whoever makes it (mod_bank,
-- bankctl, another application's SQL), adds a row to the revocation feed in the same
-- transaction: token_id -1 (no token) and the customer's id, or '*' for every customer (an
-- identity record added, changed or deleted, or a table truncated: a record's BVN names no
-- customer without the identity keys). The processes read these rows with the token
-- revocations (008) and drop the answers they name. A count's deletion (a success clearing
-- it, or the window's pruning) adds nothing: it never turns an answer away.
ALTER TABLE auth_token_revocations ADD COLUMN IF NOT EXISTS customer_id text;

-- Rows older than an hour go (no cache entry lives over 60 s), at most 100 at a time, by one
-- transaction at a time: the others skip it rather than wait on the rows it deletes (so
-- writers of different tables never wait on, or deadlock with, each other here). An advisory
-- lock needs no privilege on the table beyond the DELETE.
CREATE OR REPLACE FUNCTION auth_token_revocations_prune() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF pg_try_advisory_xact_lock(hashtext('auth_token_revocations_prune')) THEN
        DELETE FROM auth_token_revocations WHERE seq IN (
            SELECT seq FROM auth_token_revocations
             WHERE revoked_at < now() - interval '1 hour' LIMIT 100);
    END IF;
END
$$;

-- The token triggers' function of 008, pruning the same way.
CREATE OR REPLACE FUNCTION auth_access_tokens_revoked() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM auth_token_revocations_prune();
    INSERT INTO auth_token_revocations (token_id)
    VALUES (CASE WHEN TG_OP = 'TRUNCATE' THEN 0 ELSE OLD.id END);
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION bvn_answers_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    who text;
BEGIN
    IF TG_OP = 'TRUNCATE' OR TG_TABLE_NAME = 'bvn_records' THEN
        who := '*';
    ELSIF TG_TABLE_NAME = 'customers' THEN
        who := OLD.id;
    ELSIF TG_TABLE_NAME = 'throttle_counts' THEN
        who := NEW.subject;
    ELSIF TG_OP = 'INSERT' THEN
        who := NEW.customer_id;
    ELSE
        who := OLD.customer_id;
        IF TG_OP = 'UPDATE' AND NEW.customer_id IS DISTINCT FROM OLD.customer_id THEN
            INSERT INTO auth_token_revocations (token_id, customer_id)
            VALUES (-1, NEW.customer_id);
        END IF;
    END IF;
    PERFORM auth_token_revocations_prune();
    INSERT INTO auth_token_revocations (token_id, customer_id) VALUES (-1, who);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS customers_answer_changed ON customers;
CREATE TRIGGER customers_answer_changed AFTER UPDATE OR DELETE ON customers
    FOR EACH ROW EXECUTE FUNCTION bvn_answers_changed();
DROP TRIGGER IF EXISTS customers_answer_truncated ON customers;
CREATE TRIGGER customers_answer_truncated AFTER TRUNCATE ON customers
    FOR EACH STATEMENT EXECUTE FUNCTION bvn_answers_changed();
DROP TRIGGER IF EXISTS accounts_answer_changed ON accounts;
CREATE TRIGGER accounts_answer_changed AFTER INSERT OR UPDATE OR DELETE ON accounts
    FOR EACH ROW EXECUTE FUNCTION bvn_answers_changed();
DROP TRIGGER IF EXISTS accounts_answer_truncated ON accounts;
CREATE TRIGGER accounts_answer_truncated AFTER TRUNCATE ON accounts
    FOR EACH STATEMENT EXECUTE FUNCTION bvn_answers_changed();
DROP TRIGGER IF EXISTS bvn_records_answer_changed ON bvn_records;
CREATE TRIGGER bvn_records_answer_changed AFTER INSERT OR UPDATE OR DELETE ON bvn_records
    FOR EACH ROW EXECUTE FUNCTION bvn_answers_changed();
DROP TRIGGER IF EXISTS bvn_records_answer_truncated ON bvn_records;
CREATE TRIGGER bvn_records_answer_truncated AFTER TRUNCATE ON bvn_records
    FOR EACH STATEMENT EXECUTE FUNCTION bvn_answers_changed();
DROP TRIGGER IF EXISTS throttle_counts_answer_changed ON throttle_counts;
CREATE TRIGGER throttle_counts_answer_changed AFTER INSERT OR UPDATE ON throttle_counts
    FOR EACH ROW WHEN (NEW.scope = 'bvn') EXECUTE FUNCTION bvn_answers_changed();
