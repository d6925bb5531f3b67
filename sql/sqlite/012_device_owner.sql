-- A device token belongs to one customer: the one who signed in with it last (CONTRACT C6,
-- docs/push.md, "Whose phone hears what"). Additions only: a module built for schema 11
-- serves on this one and gets the same rules, because the database keeps them:
-- - devices.token_id is the session that signed in on the device last; signing out (or any
--   deletion of that token: bankctl, a SQL DELETE, the customer's removal) removes the
--   device with it. Rows from before this schema have none and stay until their customer
--   signs in on them again or they are dropped by BankMaxDevices.
-- - an insert of a device token takes it from every other customer (devices_take);
-- - a device that goes, however it goes, takes its unsent messages with it: they become
--   unregistered, never sent to whoever holds the phone next (devices_gone).
-- SQLite runs one writer at a time, so two sign-ins on one phone are applied one after the
-- other and the later one keeps it.
ALTER TABLE devices ADD COLUMN token_id INTEGER
    REFERENCES auth_access_tokens (id) ON DELETE CASCADE;
CREATE INDEX IF NOT EXISTS devices_token_id ON devices (token_id);
CREATE INDEX IF NOT EXISTS devices_device_token ON devices (device_token);
-- The unsent messages of one device, for devices_gone (a backlog is not read whole).
CREATE INDEX IF NOT EXISTS push_outbox_pending_device ON push_outbox (device_token, customer_id)
    WHERE state = 'pending';

CREATE TRIGGER IF NOT EXISTS devices_gone AFTER DELETE ON devices
BEGIN
    UPDATE push_outbox SET state = 'unregistered', lease = NULL,
        done_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
        last_error = 'the device left the customer (signed out, signed in as another, or dropped)'
    WHERE state = 'pending' AND customer_id = OLD.customer_id
      AND device_token = OLD.device_token;
END;

CREATE TRIGGER IF NOT EXISTS devices_take BEFORE INSERT ON devices
BEGIN
    DELETE FROM devices WHERE device_token = NEW.device_token AND customer_id <> NEW.customer_id;
END;

-- A customer's row deleted where foreign keys are off (the sqlite3 shell's default, another
-- application's connection): their tokens and devices go with it all the same, so that no
-- token outlives its customer (the tokens' deletion reaches every process's cache through
-- the revocation feed, 008). With foreign keys on, the cascade has removed them already.
CREATE TRIGGER IF NOT EXISTS customers_gone AFTER DELETE ON customers
BEGIN
    DELETE FROM auth_access_tokens WHERE tokenable_id = OLD.id;
    DELETE FROM devices WHERE customer_id = OLD.id;
END;

-- A phone held by several customers before this schema stays with the one seen last.
DELETE FROM devices WHERE EXISTS (
    SELECT 1 FROM devices e WHERE e.device_token = devices.device_token
    AND (e.last_seen_at > devices.last_seen_at
         OR (e.last_seen_at = devices.last_seen_at AND e.customer_id > devices.customer_id)));
