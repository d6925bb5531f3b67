-- Sign-in: expired throttle rows are pruned by window_start after successful sign-ins
-- (mod_bank/bank_sign_in.c); the index keeps that delete from scanning the table.
CREATE INDEX IF NOT EXISTS sign_in_attempts_window ON sign_in_attempts (window_start);
