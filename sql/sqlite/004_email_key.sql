-- E-mail matching folds ASCII letters only, the same on both drivers: lower() folds more
-- under a PostgreSQL UTF-8 locale (U+212A KELVIN SIGN to 'k', U+0130 to 'i'), so that
-- 'KİKİ@example.com' matched 'kiki@example.com'. email_key is the e-mail with A-Z folded
-- to a-z and nothing else; sign-in and bankctl look customers up by it (the caller folds,
-- bank_ascii_lower) and the unique index moves to it. SQLite has no translate(): 26 replace()
-- calls, one per letter.
ALTER TABLE customers ADD COLUMN email_key TEXT GENERATED ALWAYS AS (
    replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(email, 'A', 'a'), 'B', 'b'), 'C', 'c'), 'D', 'd'), 'E', 'e'), 'F', 'f'), 'G', 'g'), 'H', 'h'), 'I', 'i'), 'J', 'j'), 'K', 'k'), 'L', 'l'), 'M', 'm'), 'N', 'n'), 'O', 'o'), 'P', 'p'), 'Q', 'q'), 'R', 'r'), 'S', 's'), 'T', 't'), 'U', 'u'), 'V', 'v'), 'W', 'w'), 'X', 'x'), 'Y', 'y'), 'Z', 'z')
) VIRTUAL;
CREATE UNIQUE INDEX IF NOT EXISTS customers_email_key ON customers (email_key);
DROP INDEX IF EXISTS customers_email_lower;
