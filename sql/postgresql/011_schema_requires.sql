-- Which modules may serve on the schema. A migration that only adds (tables, columns,
-- triggers that old statements do not notice) leaves it NULL: a module built for an older
-- schema serves on the new one, so servers can be upgraded one at a time after the
-- migration (docs/deployment.md, "Upgrades"). A migration that changes or removes what an
-- older module uses says, on a line of its own, `-- requires: N`: bankctl migrate records
-- N, and a module that knows only schemas below N refuses to start (and its configuration
-- test fails) instead of serving wrong answers.
ALTER TABLE schema_version ADD COLUMN IF NOT EXISTS requires integer;
