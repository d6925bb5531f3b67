-- Where an identity record came from: 'table' (loaded by the operator, `bankctl bvn add`) or
-- the identity provider that confirmed it at onboarding ('dojah', 'prembly'), and when that
-- provider was asked (docs/identity.md). A provider's match keeps only what the account
-- needs: names and date of birth, no phone.
ALTER TABLE bvn_records ADD COLUMN source text NOT NULL DEFAULT 'table';
ALTER TABLE bvn_records ADD COLUMN checked_at timestamptz;
