-- Identity data sealed at rest (docs/security.md): a customer's BVN and the identity records
-- (BVN, names, date of birth, phone) are stored as AES-256-GCM values that name their key
-- ("ID:base64"), bound to their column and row. crypt_key is the id of the key a row's
-- values are sealed with; NULL: a row written before this migration, still plain, until
-- `bankctl rekey` seals it. bvn_hash is the keyed hash (HMAC-SHA256) of the BVN in hex: the
-- lookup key and the one-BVN-per-customer rule of sealed rows.
ALTER TABLE customers ADD COLUMN bvn_hash TEXT;
ALTER TABLE customers ADD COLUMN crypt_key TEXT;
CREATE UNIQUE INDEX IF NOT EXISTS customers_bvn_hash ON customers (bvn_hash);

-- bvn_records is rebuilt (SQLite cannot drop a CHECK): bvn no longer holds 11 digits once
-- sealed. A sealed row is found by bvn_hash, its values opened with bvn_hash as the row.
CREATE TABLE bvn_records_sealed (
    bvn           TEXT PRIMARY KEY,                -- sealed; the BVN itself while plain
    first_name    TEXT NOT NULL,
    last_name     TEXT NOT NULL,
    date_of_birth TEXT NOT NULL,                    -- sealed; YYYY-MM-DD while plain
    phone         TEXT,
    created_at    TEXT NOT NULL,
    source        TEXT NOT NULL DEFAULT 'table',
    checked_at    TEXT,
    bvn_hash      TEXT UNIQUE,
    crypt_key     TEXT
);
INSERT INTO bvn_records_sealed (bvn, first_name, last_name, date_of_birth, phone, created_at,
    source, checked_at)
    SELECT bvn, first_name, last_name, date_of_birth, phone, created_at, source, checked_at
    FROM bvn_records;
DROP TABLE bvn_records;
ALTER TABLE bvn_records_sealed RENAME TO bvn_records;

-- Each key's check value (HMAC-SHA256 under the key of a fixed text): the module and bankctl
-- refuse a key whose check value differs from the one recorded when it was first used.
-- kind: 'enc' (id: the key id) or 'hash' (id: '').
CREATE TABLE IF NOT EXISTS identity_keys (
    kind        TEXT NOT NULL,
    id          TEXT NOT NULL,
    check_value TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (kind, id)
);
