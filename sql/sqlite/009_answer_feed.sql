-- What a verified customer's BVN answer is made of, for the BVN answer cache of every process
-- (BankBvnCacheSeconds, docs/security.md): each change to a customer's row, account or
-- BVN failure count, and each change to the identity records, whoever makes it (mod_bank,
-- bankctl, another application's SQL), adds a row to the revocation feed in the same
-- transaction: token_id -1 (no token) and the customer's id, or '*' for every customer (an
-- identity record added, changed or deleted: a record's BVN names no customer without the
-- identity keys). The processes read these rows with the token revocations (008) and drop
-- the answers they name. A count's deletion (a success clearing it, or the window's
-- pruning) adds nothing: it never turns an answer away. Two of these triggers (a customer's
-- row changed, a first failure counted) also remove rows older than an hour, as the token
-- deletion's does (no cache entry lives over 60 s); SQLite has one writer at a time, so no
-- writer waits on another's pruning.
ALTER TABLE auth_token_revocations ADD COLUMN customer_id TEXT;

CREATE TRIGGER IF NOT EXISTS customers_answer_changed AFTER UPDATE ON customers
BEGIN
    DELETE FROM auth_token_revocations
     WHERE revoked_at < CAST(strftime('%s', 'now') AS INTEGER) - 3600;
    INSERT INTO auth_token_revocations (token_id, customer_id, revoked_at)
    VALUES (-1, OLD.id, CAST(strftime('%s', 'now') AS INTEGER));
END;
CREATE TRIGGER IF NOT EXISTS customers_answer_deleted AFTER DELETE ON customers
BEGIN
    INSERT INTO auth_token_revocations (token_id, customer_id, revoked_at)
    VALUES (-1, OLD.id, CAST(strftime('%s', 'now') AS INTEGER));
END;
CREATE TRIGGER IF NOT EXISTS accounts_answer_added AFTER INSERT ON accounts
BEGIN
    INSERT INTO auth_token_revocations (token_id, customer_id, revoked_at)
    VALUES (-1, NEW.customer_id, CAST(strftime('%s', 'now') AS INTEGER));
END;
CREATE TRIGGER IF NOT EXISTS accounts_answer_changed AFTER UPDATE ON accounts
BEGIN
    INSERT INTO auth_token_revocations (token_id, customer_id, revoked_at)
    VALUES (-1, OLD.customer_id, CAST(strftime('%s', 'now') AS INTEGER)),
           (-1, NEW.customer_id, CAST(strftime('%s', 'now') AS INTEGER));
END;
CREATE TRIGGER IF NOT EXISTS accounts_answer_deleted AFTER DELETE ON accounts
BEGIN
    INSERT INTO auth_token_revocations (token_id, customer_id, revoked_at)
    VALUES (-1, OLD.customer_id, CAST(strftime('%s', 'now') AS INTEGER));
END;
CREATE TRIGGER IF NOT EXISTS bvn_records_answer_added AFTER INSERT ON bvn_records
BEGIN
    INSERT INTO auth_token_revocations (token_id, customer_id, revoked_at)
    VALUES (-1, '*', CAST(strftime('%s', 'now') AS INTEGER));
END;
CREATE TRIGGER IF NOT EXISTS bvn_records_answer_changed AFTER UPDATE ON bvn_records
BEGIN
    INSERT INTO auth_token_revocations (token_id, customer_id, revoked_at)
    VALUES (-1, '*', CAST(strftime('%s', 'now') AS INTEGER));
END;
CREATE TRIGGER IF NOT EXISTS bvn_records_answer_deleted AFTER DELETE ON bvn_records
BEGIN
    INSERT INTO auth_token_revocations (token_id, customer_id, revoked_at)
    VALUES (-1, '*', CAST(strftime('%s', 'now') AS INTEGER));
END;
CREATE TRIGGER IF NOT EXISTS throttle_counts_answer_added AFTER INSERT ON throttle_counts
WHEN NEW.scope = 'bvn'
BEGIN
    DELETE FROM auth_token_revocations
     WHERE revoked_at < CAST(strftime('%s', 'now') AS INTEGER) - 3600;
    INSERT INTO auth_token_revocations (token_id, customer_id, revoked_at)
    VALUES (-1, NEW.subject, CAST(strftime('%s', 'now') AS INTEGER));
END;
CREATE TRIGGER IF NOT EXISTS throttle_counts_answer_changed AFTER UPDATE ON throttle_counts
WHEN NEW.scope = 'bvn'
BEGIN
    INSERT INTO auth_token_revocations (token_id, customer_id, revoked_at)
    VALUES (-1, NEW.subject, CAST(strftime('%s', 'now') AS INTEGER));
END;
