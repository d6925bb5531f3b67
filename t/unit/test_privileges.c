/* What the runtime role must be granted (bank_store_privileges.c): the tables and privileges
 * read from statements and trigger bodies, and, on PostgreSQL (BANK_TEST_PG_PARAMS), what a
 * role granted less than docs/deployment.md says lacks: rights on tables, what the triggers
 * write, a serial column's sequence. */
#include "unit.h"

#include <apr_hash.h>
#include <apr_strings.h>
#include "bank_sql.h"
#include "db_fixture.h"

/* The needs of sql as "table:bits" sorted by table, e.g. "a:1 b:3". */
static const char *needs_of(apr_pool_t *p, const char *sql)
{
    apr_hash_t *needs = apr_hash_make(p);
    const char *names[32], *out = "";
    apr_hash_index_t *hi;
    int n = 0, i, j;

    bank_sql_needs(p, sql, needs);
    for (hi = apr_hash_first(p, needs); hi && n < 32; hi = apr_hash_next(hi)) {
        const void *k;
        apr_hash_this(hi, &k, NULL, NULL);
        names[n++] = k;
    }
    for (i = 1; i < n; i++) { /* sorted, for a stable answer */
        for (j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    }
    for (i = 0; i < n; i++) {
        out = apr_psprintf(p, "%s%s%s:%d", out, i ? " " : "", names[i],
                           *(int *)apr_hash_get(needs, names[i], APR_HASH_KEY_STRING));
    }
    return out;
}

static void test_needs(apr_pool_t *p)
{
    /* 1 SELECT, 2 INSERT, 4 UPDATE, 8 DELETE */
    CHECK_STR(needs_of(p, "SELECT id, name FROM banks WHERE active = 1"), "banks:1");
    CHECK_STR(needs_of(p, "INSERT INTO t (a, b) VALUES (%s, %s)"), "t:2");
    CHECK_STR(needs_of(p, "INSERT INTO t (a) VALUES (%s) RETURNING id"), "t:3");
    CHECK_STR(needs_of(p, "INSERT INTO t (a) SELECT x FROM u ON CONFLICT (a) DO NOTHING"),
              "t:2 u:1");
    CHECK_STR(needs_of(p, "INSERT INTO t (a) VALUES (1) ON CONFLICT (a) DO UPDATE SET a = 2"),
              "t:7");
    CHECK_STR(needs_of(p, "UPDATE auth_access_tokens SET x = v.column2 FROM (VALUES (%lld, "
                          "%pDz), (1, 2)) AS v WHERE auth_access_tokens.id = v.column1"),
              "auth_access_tokens:5");
    CHECK_STR(needs_of(p, "DELETE FROM t WHERE id = %lld"), "t:9");
    CHECK_STR(needs_of(p, "SELECT a.x FROM a JOIN b ON b.id = a.id LEFT JOIN c ON c.y = b.y"),
              "a:1 b:1 c:1");
    /* a FROM list after a sub-select (the revocation feed on PostgreSQL) */
    CHECK_STR(needs_of(p, "SELECT token_id FROM (SELECT CAST(%s AS pg_snapshot) AS s) AS f, "
                          "auth_token_revocations WHERE xid >= 1 LIMIT 1001"),
              "auth_token_revocations:1");
    /* locking, functions, the catalog, literals and comments name no table */
    CHECK_STR(needs_of(p, "SELECT id FROM q WHERE s = 'FROM x' LIMIT 5 FOR UPDATE SKIP LOCKED"),
              "q:1");
    CHECK_STR(needs_of(p, "SELECT count(*) FROM pg_prepared_statements -- FROM y\n"), "");
    CHECK_STR(needs_of(p, "SELECT 1 FROM a /* FROM b */ WHERE x = 1"), "a:1");
    CHECK_STR(needs_of(p, "SELECT id FROM q WHERE s = 1 FOR NO KEY UPDATE SKIP LOCKED"), "q:1");
    CHECK_STR(needs_of(p, "SELECT e FROM unnest(string_to_array(%s, ',')) AS e"), "");
    CHECK_STR(needs_of(p, "SELECT 1 FROM \"Quoted\" WHERE it''s = 'a''b FROM z'"), "Quoted:1");
    /* a trigger function's body: several statements */
    CHECK_STR(needs_of(p,
                       "BEGIN\n    DELETE FROM auth_token_revocations WHERE revoked_at < now();\n"
                       "    INSERT INTO auth_token_revocations (token_id) VALUES (OLD.id);\n"
                       "    INSERT INTO push_outbox (a) SELECT NEW.id FROM devices d WHERE "
                       "d.c = NEW.c;\n    RETURN NULL;\nEND"),
              "auth_token_revocations:11 devices:1 push_outbox:3");
}

static void run_sql(bank_db_t *db, const char *sql)
{
    int rv = bank_db_query(db, sql);

    CHECK(rv == 0);
    if (rv != 0) {
        fprintf(stderr, "%s: %s\n", sql, bank_db_error(db));
    }
}

/* The suite's own role owns everything: nothing missing. A role granted SELECT only lacks
 * the writes, those of the triggers included; granted as docs/deployment.md says, nothing;
 * push_outbox.id a serial again (as 0.2.0 made it), the sequence. All in a transaction
 * rolled back. */
static void test_with_db(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *missing = "unset", *err = NULL;
    bank_db_t *su;

    CHECK(bank_store_privileges_missing(db, &missing) == BANK_DB_OK);
    CHECK(missing == NULL);
    if (!bank_db_is_pgsql(db)) {
        return;
    }
    su = bank_db_open(p, "pgsql", apr_pstrcat(p, fixture_params, " user=postgres", (char *)NULL),
                      &err);
    CHECK(su != NULL && bank_db_prepare_all(su) == NULL);
    if (!su) {
        return;
    }
    run_sql(su, "BEGIN; CREATE ROLE bank_probe; GRANT USAGE ON SCHEMA public TO bank_probe;"
                " GRANT SELECT ON ALL TABLES IN SCHEMA public TO bank_probe;"
                " SET LOCAL ROLE bank_probe");
    CHECK(bank_store_privileges_missing(su, &missing) == BANK_DB_OK);
    CHECK(missing && strstr(missing, "INSERT on auth_access_tokens") &&
          strstr(missing, "UPDATE on auth_access_tokens") &&
          strstr(missing, "DELETE on auth_access_tokens") &&
          strstr(missing, "INSERT on payment_notices") &&
          strstr(missing, "INSERT on push_outbox") &&            /* its trigger's */
          strstr(missing, "DELETE on auth_token_revocations") && /* the feed's pruning */
          !strstr(missing, "SELECT on"));
    run_sql(su, "RESET ROLE; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public"
                " TO bank_probe; SET LOCAL ROLE bank_probe");
    CHECK(bank_store_privileges_missing(su, &missing) == BANK_DB_OK);
    CHECK(missing == NULL);
    run_sql(su,
            "RESET ROLE; DO $$ BEGIN EXECUTE format('SET LOCAL ROLE %I', (SELECT tableowner"
            " FROM pg_tables WHERE tablename = 'push_outbox')); END $$;"
            " ALTER TABLE push_outbox ALTER COLUMN id DROP IDENTITY;"
            " CREATE SEQUENCE push_outbox_id_seq OWNED BY push_outbox.id;"
            " ALTER TABLE push_outbox ALTER COLUMN id SET DEFAULT nextval('push_outbox_id_seq');"
            " SET LOCAL ROLE bank_probe");
    CHECK(bank_store_privileges_missing(su, &missing) == BANK_DB_OK);
    CHECK_STR(missing, "USAGE on sequence push_outbox_id_seq");
    run_sql(su, "ROLLBACK");
}

static void run_tests(apr_pool_t *p)
{
    test_needs(p);
    fixture_each(p, test_with_db);
}
