-- E-mail matching folds ASCII letters only, the same on both drivers: lower() folds more
-- under a UTF-8 locale (U+212A KELVIN SIGN to 'k', U+0130 to 'i'), so that
-- 'KİKİ@example.com' matched 'kiki@example.com'. email_key is the e-mail with A-Z folded
-- to a-z and nothing else (translate() maps code points, whatever the locale); sign-in and
-- bankctl look customers up by it (the caller folds, bank_ascii_lower) and the unique index
-- moves to it. Two e-mails equal under ASCII folding were equal under lower() too, so the
-- new index holds wherever the old one did.
ALTER TABLE customers ADD COLUMN email_key text GENERATED ALWAYS AS (
    translate(email, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')
) STORED;
CREATE UNIQUE INDEX IF NOT EXISTS customers_email_key ON customers (email_key);
DROP INDEX IF EXISTS customers_email_lower;
