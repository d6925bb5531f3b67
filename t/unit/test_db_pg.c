/* The query helpers (sql.c) against a live PostgreSQL: what the pgsql driver hands back
 * (timestamps in any session TimeZone, booleans, NULLs), every statement preparing, and a
 * transaction begun on a connection the server has closed. Needs BANK_TEST_PG_PARAMS (a
 * libpq conninfo of a migrated database): scripts/run-tests sets it under DB=pgsql. Without
 * it, it says it skipped and counts nothing. */
#include "unit.h"

#include <stdlib.h>
#include <unistd.h>
#include <apr_strings.h>
#include <apr_dbd.h>

#include "bank_db.h"
#include "bank_time.h"

static apr_status_t close_db(void *data)
{
    bank_db_t *db = data;
    apr_dbd_close(db->driver, db->handle);
    return APR_SUCCESS;
}

/* Opens a connection with the session settings mod_bank gives its own, or NULL. */
static bank_db_t *open_db(apr_pool_t *p, const char *params)
{
    bank_db_t *db = apr_pcalloc(p, sizeof(*db));
    const char *err = NULL;
    int n = 0;

    if (apr_dbd_get_driver(p, "pgsql", &db->driver) != APR_SUCCESS ||
        apr_dbd_open_ex(db->driver, p, params, &db->handle, &err) != APR_SUCCESS) {
        fprintf(stderr, "cannot open %s: %s\n", params, err ? err : "no driver");
        return NULL;
    }
    apr_pool_cleanup_register(p, db, close_db, apr_pool_cleanup_null);
    db->pool = p;
    db->prepared = apr_hash_make(p);
    apr_dbd_query(db->driver, db->handle, &n, BANK_PG_SESSION_SQL);
    return db;
}

/* Plain SQL, first column of the first row (rows read to the end), or NULL. */
static const char *value(bank_db_t *db, const char *sql)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    const char *v = NULL;

    if (apr_dbd_select(db->driver, db->pool, db->handle, &res, sql, 1) != 0) {
        return NULL;
    }
    while (apr_dbd_get_row(db->driver, db->pool, res, &row, -1) == 0) {
        if (!v) {
            v = apr_pstrdup(db->pool, apr_dbd_get_entry(db->driver, row, 0));
        }
    }
    return v;
}

/* Every statement of the module prepares, under its label, with its PostgreSQL text. */
static void test_statements(apr_pool_t *p, bank_db_t *db)
{
    const bank_stmt_t *st;
    int bad = 0;

    for (st = bank_statements; st->label; st++) {
        apr_dbd_prepared_t *ps = NULL;
        if (apr_dbd_prepare(db->driver, p, db->handle, bank_stmt_sql(st, "pgsql"), st->label,
                            &ps) != 0) {
            fprintf(stderr, "%s: %s\n", st->label, apr_dbd_error(db->driver, db->handle, 0));
            bad++;
            continue;
        }
        apr_hash_set(db->prepared, st->label, APR_HASH_KEY_STRING, ps);
    }
    CHECK(bad == 0);
}

/* The same instant read back in any session TimeZone, offsets with seconds included. */
static void test_timestamps(bank_db_t *db)
{
    static const char *const zones[] = {"UTC", "Asia/Kathmandu", "America/St_Johns",
                                        "Pacific/Chatham", "Europe/Amsterdam"};
    apr_time_t want = APR_INT64_C(1795333222123) * 1000, old = APR_INT64_C(-2208988800) * 1000000;
    apr_size_t i;
    apr_time_t t;
    int n = 0;

    for (i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
        const char *v;
        apr_dbd_query(db->driver, db->handle, &n,
                      apr_psprintf(db->pool, "SET TIME ZONE '%s'", zones[i]));
        v = value(db, "SELECT CAST('2026-11-22T07:40:22.123Z' AS timestamptz)");
        CHECK(v && bank_time_parse(v, &t) == 0 && t == want);
        /* 1900-01-01T00:00:00Z: local mean time in Amsterdam, +00:19:32 */
        v = value(db, "SELECT CAST('1900-01-01T00:00:00Z' AS timestamptz)");
        CHECK(v && bank_time_parse(v, &t) == 0 && t == old);
    }
    CHECK_STR(value(db, "SELECT CAST('1900-01-01T00:00:00Z' AS timestamptz)"),
              "1900-01-01 00:19:32+00:19:32");
    /* The session set-up wins over a server or role DateStyle that is not ISO. */
    apr_dbd_query(db->driver, db->handle, &n, "SET DateStyle = 'SQL, DMY'");
    apr_dbd_query(db->driver, db->handle, &n, BANK_PG_SESSION_SQL);
    CHECK_STR(value(db, "SELECT CAST('2026-11-22' AS date)"), "2026-11-22");
    apr_dbd_query(db->driver, db->handle, &n, "SET TIME ZONE 'UTC'");
}

static void test_values(apr_pool_t *p, bank_db_t *db)
{
    bank_rows_t r;

    CHECK(bank_db_bool(value(db, "SELECT TRUE")) == 1);
    CHECK(bank_db_bool(value(db, "SELECT FALSE")) == 0);
    CHECK(bank_db_bool("1") == 1 && bank_db_bool("true") == 1);
    CHECK(bank_db_bool("0") == 0 && bank_db_bool(NULL) == 0 && bank_db_bool("") == 0);
    /* NULL comes back as a NULL pointer, not pgsql's "". */
    {
        const char *args[] = {"1"};
        CHECK(bank_db_select(db, "bank_notices_list", &r, 1, args) == BANK_DB_OK);
    }
    {
        const char *args[] = {"nobody-at-all@example.invalid"};
        CHECK(bank_db_select(db, "bank_customer_by_email", &r, 1, args) == BANK_DB_OK &&
              r.nrows == 0);
    }
    (void)p;
}

/* A transaction begun on a connection the server closed under it (as a restart does) fails
 * cleanly. apr_dbd_pgsql's own transaction_start crashes the process there. */
static void test_lost_connection(apr_pool_t *p, const char *params)
{
    bank_db_t *a = open_db(p, params), *b = open_db(p, params);
    const char *pid, *gone = NULL;
    bank_rows_t r;
    int i;

    CHECK(a && b);
    if (!a || !b) {
        return;
    }
    CHECK(bank_db_begin(a) == BANK_DB_OK && a->in_txn);
    CHECK(bank_db_end(a, 1) == BANK_DB_OK && !a->in_txn);
    pid = value(a, "SELECT pg_backend_pid()");
    CHECK(pid != NULL);
    CHECK_STR(value(b, apr_psprintf(p, "SELECT pg_terminate_backend(%s)", pid ? pid : "0")), "t");
    for (i = 0; i < 100 && !(gone && strcmp(gone, "0") == 0); i++) {
        usleep(20000);
        gone = value(b, apr_psprintf(p, "SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                                     pid ? pid : "0"));
    }
    CHECK(bank_db_begin(a) != BANK_DB_OK);
    CHECK(!a->in_txn && a->error != NULL);
    CHECK(bank_db_end(a, 0) == BANK_DB_ERROR);
    CHECK(bank_db_select(a, "bank_banks_active", &r, 0, NULL) == BANK_DB_NO_STMT);
    CHECK(apr_dbd_query(a->driver, a->handle, &i, "SELECT 1") != 0);
}

static void run_tests(apr_pool_t *p)
{
    const char *params = getenv("BANK_TEST_PG_PARAMS");
    bank_db_t *db;

    if (!params || !*params) {
        printf("test_db_pg: skipped: needs PostgreSQL (BANK_TEST_PG_PARAMS; make test "
               "DB=pgsql runs it)\n");
        return;
    }
    apr_dbd_init(p);
    db = open_db(p, params);
    CHECK(db != NULL);
    if (!db) {
        return;
    }
    test_statements(p, db);
    test_timestamps(db);
    test_values(p, db);
    test_lost_connection(p, params);
}
