-- Demo identity records for the dev server (`make run`); never loaded in production.
-- The demo customer (demo@example.com) matches the first one.
INSERT INTO bvn_records (bvn, first_name, last_name, date_of_birth, phone, created_at) VALUES
    ('22212345678', 'Ada', 'Obi', '1990-04-12', '+2348012345678', '2026-01-01T00:00:00.000Z'),
    ('22298765432', 'Chinedu', 'Okafor', '1985-11-03', '+2348098765432', '2026-01-01T00:00:00.000Z'),
    ('22255555555', 'Fatima', 'Bello', '1999-01-31', '+2348055555555', '2026-01-01T00:00:00.000Z')
ON CONFLICT (bvn) DO NOTHING;
