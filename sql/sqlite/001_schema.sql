-- mod_bank schema for SQLite (the embedded default). Timestamps are UTC ISO 8601 text with
-- millisecond precision and 'Z'; money is integer minor units (kobo). Applied by
-- `bankctl migrate`, which records it in schema_version.
CREATE TABLE IF NOT EXISTS customers (
    id             TEXT PRIMARY KEY,                -- UUID v4
    email          TEXT NOT NULL,
    password       TEXT NOT NULL,                   -- scrypt or bcrypt hash string
    first_name     TEXT NOT NULL,
    last_name      TEXT NOT NULL,
    phone          TEXT NOT NULL,
    email_verified INTEGER NOT NULL DEFAULT 0 CHECK (email_verified IN (0, 1)),
    bvn            TEXT UNIQUE,
    referral_code  TEXT UNIQUE,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS customers_email_lower ON customers (lower(email));

-- AdonisJS v6 access tokens: only the SHA-256 hex of the secret is stored.
CREATE TABLE IF NOT EXISTS auth_access_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    tokenable_id TEXT NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
    type         TEXT NOT NULL DEFAULT 'auth_token',
    name         TEXT,
    hash         TEXT NOT NULL UNIQUE,
    abilities    TEXT NOT NULL DEFAULT '["*"]',
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    last_used_at TEXT,
    expires_at   TEXT
);
CREATE INDEX IF NOT EXISTS auth_access_tokens_tokenable ON auth_access_tokens (tokenable_id);

CREATE TABLE IF NOT EXISTS devices (
    customer_id  TEXT NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
    device_token TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    PRIMARY KEY (customer_id, device_token)
);

-- Failed sign-ins per (lower-cased e-mail, client IP), shared by every process and server.
CREATE TABLE IF NOT EXISTS sign_in_attempts (
    email        TEXT NOT NULL,
    ip           TEXT NOT NULL,
    failures     INTEGER NOT NULL,
    window_start TEXT NOT NULL,
    PRIMARY KEY (email, ip)
);

-- Identity-provider records the operator loads (bankctl bvn add).
CREATE TABLE IF NOT EXISTS bvn_records (
    bvn           TEXT PRIMARY KEY CHECK (length(bvn) = 11),
    first_name    TEXT NOT NULL,
    last_name     TEXT NOT NULL,
    date_of_birth TEXT NOT NULL,                    -- YYYY-MM-DD
    phone         TEXT,
    created_at    TEXT NOT NULL
);

-- Serial numbers for NUBAN account numbers: one row per issued serial.
CREATE TABLE IF NOT EXISTS account_serials (
    serial     INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS accounts (
    id              TEXT PRIMARY KEY,               -- UUID v4
    customer_id     TEXT NOT NULL UNIQUE REFERENCES customers (id) ON DELETE CASCADE,
    account_type    TEXT NOT NULL DEFAULT 'personal',
    balance_minor   INTEGER NOT NULL DEFAULT 0,     -- kobo
    currency        TEXT NOT NULL DEFAULT 'NGN',
    status          TEXT NOT NULL,
    bank_name       TEXT NOT NULL,
    verified        INTEGER NOT NULL DEFAULT 1 CHECK (verified IN (0, 1)),
    bank_account_id TEXT NOT NULL UNIQUE,           -- identifier at the bank (walletId)
    account_name    TEXT NOT NULL,
    account_number  TEXT NOT NULL UNIQUE CHECK (length(account_number) = 10),
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS banks (
    id     INTEGER PRIMARY KEY,
    name   TEXT NOT NULL,
    slug   TEXT NOT NULL UNIQUE,
    code   TEXT NOT NULL UNIQUE,
    active INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE IF NOT EXISTS payment_notices (
    id                      TEXT PRIMARY KEY,       -- UUID v4
    partner                 TEXT NOT NULL,
    service                 TEXT NOT NULL,
    type                    TEXT NOT NULL,
    status                  TEXT NOT NULL,          -- received | ignored
    amount                  INTEGER,
    charges                 TEXT,                   -- the JSON number as sent
    currency                TEXT,
    narration               TEXT,
    receiver_account_name   TEXT,
    receiver_account_number TEXT,
    receiver_bank_code      TEXT,
    session_id              TEXT,
    status_code             TEXT NOT NULL,
    status_message          TEXT,
    transaction_reference   TEXT NOT NULL,
    wallet_id               TEXT,
    client_ref              TEXT,                   -- JSON text, as sent
    customer_reference      TEXT,                   -- JSON text, as sent
    account_id              TEXT REFERENCES accounts (id),
    customer_id             TEXT REFERENCES customers (id),
    raw_body                TEXT NOT NULL,
    received_at             TEXT NOT NULL,
    UNIQUE (partner, transaction_reference, status_code)
);
CREATE INDEX IF NOT EXISTS payment_notices_received ON payment_notices (received_at);
