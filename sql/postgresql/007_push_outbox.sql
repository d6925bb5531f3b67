-- Push notifications (docs/push.md): one row per message to one device. A stored
-- fund_transfer notice whose walletId matched an account writes one row per device of the
-- account's customer, by the trigger below, in the statement (so the transaction) that
-- stores the notice; a repeated notice is not stored, so it writes nothing.
-- state: pending (to send; next_at is when it may be tried: the lease's end while a sender
-- holds it, a retry's backoff after a failure), sent, failed (attempts used up; `bankctl
-- push retry` makes it pending again), unregistered (FCM no longer knows the token).
CREATE TABLE IF NOT EXISTS push_outbox (
    id           bigserial PRIMARY KEY,
    notice_id    uuid NOT NULL REFERENCES payment_notices (id) ON DELETE CASCADE,
    customer_id  uuid NOT NULL,
    device_token text NOT NULL,
    state        text NOT NULL DEFAULT 'pending',
    attempts     integer NOT NULL DEFAULT 0,
    next_at      timestamptz NOT NULL,
    lease        text,
    created_at   timestamptz NOT NULL,
    done_at      timestamptz,
    last_error   text,
    UNIQUE (notice_id, device_token)
);

CREATE INDEX IF NOT EXISTS push_outbox_due ON push_outbox (state, next_at);

CREATE OR REPLACE FUNCTION push_outbox_notice() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO push_outbox (notice_id, customer_id, device_token, next_at, created_at)
    SELECT NEW.id, d.customer_id, d.device_token, NEW.received_at, NEW.received_at
    FROM devices d WHERE d.customer_id = NEW.customer_id;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS push_outbox_notice ON payment_notices;
CREATE TRIGGER push_outbox_notice AFTER INSERT ON payment_notices FOR EACH ROW
WHEN (NEW.customer_id IS NOT NULL AND NEW.type = 'fund_transfer' AND NEW.status = 'received')
EXECUTE FUNCTION push_outbox_notice();
