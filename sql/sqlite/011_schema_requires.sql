-- Which modules may serve on the schema: see sql/postgresql/011_schema_requires.sql.
ALTER TABLE schema_version ADD COLUMN requires INTEGER;
