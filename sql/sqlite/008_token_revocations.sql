-- Revoked tokens, for the token cache of every process (docs/security.md): each deletion of
-- a token row, and each change of what verifies it (owner, type, hash, abilities, expiry),
-- whoever makes it (mod_bank, bankctl, another application's SQL), adds a row here in the
-- same transaction. Each process reads the rows after the last it read (seq increases; SQLite
-- commits one writer at a time, so seq order is commit order) at most every 200 ms while it
-- answers from its cache, and drops those tokens. Rows older than an hour are removed by the
-- next deletion: a cache entry never lives longer than 60 s.
CREATE TABLE IF NOT EXISTS auth_token_revocations (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    token_id   INTEGER NOT NULL,
    revoked_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS auth_token_revocations_at ON auth_token_revocations (revoked_at);

CREATE TRIGGER IF NOT EXISTS auth_access_tokens_revoked AFTER DELETE ON auth_access_tokens
BEGIN
    DELETE FROM auth_token_revocations
     WHERE revoked_at < CAST(strftime('%s', 'now') AS INTEGER) - 3600;
    INSERT INTO auth_token_revocations (token_id, revoked_at)
    VALUES (OLD.id, CAST(strftime('%s', 'now') AS INTEGER));
END;

CREATE TRIGGER IF NOT EXISTS auth_access_tokens_changed
AFTER UPDATE OF id, tokenable_id, type, hash, abilities, expires_at ON auth_access_tokens
BEGIN
    INSERT INTO auth_token_revocations (token_id, revoked_at)
    VALUES (OLD.id, CAST(strftime('%s', 'now') AS INTEGER));
END;
