-- A device token belongs to one customer: see sql/sqlite/012_device_owner.sql. Additions
-- only (no `requires`): a module built for schema 11 serves on this one and gets the same
-- rules, because the database keeps them. (SQLite's 012 also removes a deleted customer's
-- tokens by trigger, for connections with foreign keys off; PostgreSQL always cascades.) Two sign-ins on one phone at once are put in
-- order by a transaction lock on the device token, taken before the other customers' rows
-- are removed: the later one keeps the phone. A second lock, on the customer, puts one
-- customer's sign-ins in order, so that the count BankMaxDevices keeps to
-- (bank_store_auth.c, bank_device_trim) sees every device committed before it. The device's
-- lock comes first in every transaction, then the customer's: no two wait for each other.
ALTER TABLE devices ADD COLUMN IF NOT EXISTS token_id bigint
    REFERENCES auth_access_tokens (id) ON DELETE CASCADE;
CREATE INDEX IF NOT EXISTS devices_token_id ON devices (token_id);
CREATE INDEX IF NOT EXISTS devices_device_token ON devices (device_token);
-- The unsent messages of one device, for devices_gone (a backlog is not read whole).
CREATE INDEX IF NOT EXISTS push_outbox_pending_device ON push_outbox (device_token, customer_id)
    WHERE state = 'pending';

CREATE OR REPLACE FUNCTION devices_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE push_outbox SET state = 'unregistered', lease = NULL, done_at = now(),
        last_error = 'the device left the customer (signed out, signed in as another, or dropped)'
    WHERE state = 'pending' AND customer_id = OLD.customer_id
      AND device_token = OLD.device_token;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS devices_gone ON devices;
CREATE TRIGGER devices_gone AFTER DELETE ON devices FOR EACH ROW
EXECUTE FUNCTION devices_gone();

CREATE OR REPLACE FUNCTION devices_take() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('devices:' || NEW.device_token, 0));
    PERFORM pg_advisory_xact_lock(hashtextextended('customer:' || NEW.customer_id::text, 0));
    DELETE FROM devices WHERE device_token = NEW.device_token AND customer_id <> NEW.customer_id;
    RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS devices_take ON devices;
CREATE TRIGGER devices_take BEFORE INSERT ON devices FOR EACH ROW
EXECUTE FUNCTION devices_take();

-- A phone held by several customers before this schema stays with the one seen last.
DELETE FROM devices d WHERE EXISTS (
    SELECT 1 FROM devices e WHERE e.device_token = d.device_token
    AND (e.last_seen_at > d.last_seen_at
         OR (e.last_seen_at = d.last_seen_at AND e.customer_id > d.customer_id)));
