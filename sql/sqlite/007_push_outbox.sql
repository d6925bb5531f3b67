-- Push notifications (docs/push.md): one row per message to one device. A stored
-- fund_transfer notice whose walletId matched an account writes one row per device of the
-- account's customer, by the trigger below, in the statement (so the transaction) that
-- stores the notice; a repeated notice is not stored, so it writes nothing.
-- state: pending (to send; next_at is when it may be tried: the lease's end while a sender
-- holds it, a retry's backoff after a failure), sent, failed (attempts used up; `bankctl
-- push retry` makes it pending again), unregistered (FCM no longer knows the token).
CREATE TABLE IF NOT EXISTS push_outbox (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    notice_id    TEXT NOT NULL REFERENCES payment_notices (id) ON DELETE CASCADE,
    customer_id  TEXT NOT NULL,
    device_token TEXT NOT NULL,
    state        TEXT NOT NULL DEFAULT 'pending',
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_at      TEXT NOT NULL,
    lease        TEXT,
    created_at   TEXT NOT NULL,
    done_at      TEXT,
    last_error   TEXT,
    UNIQUE (notice_id, device_token)
);

CREATE INDEX IF NOT EXISTS push_outbox_due ON push_outbox (state, next_at);

CREATE TRIGGER IF NOT EXISTS push_outbox_notice AFTER INSERT ON payment_notices
WHEN NEW.customer_id IS NOT NULL AND NEW.type = 'fund_transfer' AND NEW.status = 'received'
BEGIN
    INSERT INTO push_outbox (notice_id, customer_id, device_token, next_at, created_at)
    SELECT NEW.id, d.customer_id, d.device_token, NEW.received_at, NEW.received_at
    FROM devices d WHERE d.customer_id = NEW.customer_id;
END;
