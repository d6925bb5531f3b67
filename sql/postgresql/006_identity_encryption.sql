-- Identity data sealed at rest (docs/security.md): a customer's BVN and the identity records
-- (BVN, names, date of birth, phone) are stored as AES-256-GCM values that name their key
-- ("ID:base64"), bound to their column and row. crypt_key is the id of the key a row's
-- values are sealed with; NULL: a row written before this migration, still plain, until
-- `bankctl rekey` seals it. bvn_hash is the keyed hash (HMAC-SHA256) of the BVN in hex: the
-- lookup key and the one-BVN-per-customer rule of sealed rows.
ALTER TABLE customers ADD COLUMN bvn_hash text UNIQUE;
ALTER TABLE customers ADD COLUMN crypt_key text;

-- A sealed BVN is not 11 digits, nor a sealed date a date; a sealed row is found by
-- bvn_hash, its values opened with bvn_hash as the row.
ALTER TABLE bvn_records DROP CONSTRAINT IF EXISTS bvn_records_bvn_check;
ALTER TABLE bvn_records ALTER COLUMN date_of_birth TYPE text
    USING to_char(date_of_birth, 'YYYY-MM-DD');
ALTER TABLE bvn_records ADD COLUMN bvn_hash text UNIQUE;
ALTER TABLE bvn_records ADD COLUMN crypt_key text;

-- Each key's check value (HMAC-SHA256 under the key of a fixed text): the module and bankctl
-- refuse a key whose check value differs from the one recorded when it was first used.
-- kind: 'enc' (id: the key id) or 'hash' (id: '').
CREATE TABLE IF NOT EXISTS identity_keys (
    kind        text NOT NULL,
    id          text NOT NULL,
    check_value text NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (kind, id)
);
