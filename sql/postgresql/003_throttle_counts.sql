-- Failure counters shared by every process and server, one row per (scope, subject):
-- 'bvn' per customer id (BankBvnThrottle, mod_bank/bank_onboard.c) and 'address' per client IP
-- (BankSignInAddressThrottle, mod_bank/bank_sign_in.c). Rows are pruned by window_start
-- (mod_bank/bank_throttle.c), so a flood of failures keeps the table bounded.
CREATE TABLE IF NOT EXISTS throttle_counts (
    scope        text NOT NULL,
    subject      text NOT NULL,
    failures     integer NOT NULL,
    window_start timestamptz NOT NULL,
    PRIMARY KEY (scope, subject)
);
CREATE INDEX IF NOT EXISTS throttle_counts_window ON throttle_counts (scope, window_start);
