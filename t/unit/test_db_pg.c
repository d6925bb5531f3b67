/* The data layer (bank_db.c, bank_sql.c, bank_store_*.c) against a live PostgreSQL: what the pgsql
 * driver hands back (timestamps in any session TimeZone, booleans, NULLs), every statement
 * preparing, a connection the server has closed recovered, and the pgsql driver's quirks the
 * data layer works around (bank_db_driver.h: D1, D2, D3, D5, D6, D10). Needs
 * BANK_TEST_PG_PARAMS (a libpq conninfo of a migrated database): scripts/run-tests sets it under
 * DB=pgsql. Without it, it says it skipped and counts nothing. */
#include "unit.h"

#include <stdlib.h>
#include <unistd.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>

#include "bank_db_driver.h"
#include "bank_migrate.h"
#include "bank_sql.h"
#include "bank_store.h"
#include "bank_time.h"

/* Opens a connection with the session settings mod_bank gives its own, or NULL. */
static bank_db_t *open_db(apr_pool_t *p, const char *params)
{
    const char *err = NULL;
    bank_db_t *db = bank_db_open(p, "pgsql", params, &err);

    if (!db) {
        fprintf(stderr, "cannot open %s: %s\n", params, err);
    }
    return db;
}

/* Plain SQL, first column of the first row (rows read to the end), or NULL. */
static const char *value(bank_db_t *db, const char *sql)
{
    const char *v = NULL;
    return bank_db_query_value(db, sql, &v) == 0 ? v : NULL;
}

static void set(bank_db_t *db, const char *sql)
{
    CHECK(bank_db_query(db, sql) == 0);
}

/* Every statement of the store prepares, under its label, with its PostgreSQL text; the
 * markers expand to PostgreSQL's casts. */
static void test_statements(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *err = bank_db_prepare_all(db);

    if (err) {
        fprintf(stderr, "%s\n", err);
    }
    CHECK(err == NULL);
    CHECK_STR(bank_stmt_expand(p, "WHERE id = {uuid} AND x = {bool}", 1),
              "WHERE id = CAST(%s AS uuid) AND x = %d <> 0");
    CHECK_STR(bank_stmt_expand(p, "SELECT {ymd:date_of_birth}", 1),
              "SELECT to_char(date_of_birth, 'YYYY-MM-DD')");
}

/* The same instant read back in any session TimeZone, offsets with seconds included. */
static void test_timestamps(bank_db_t *db)
{
    static const char *const zones[] = {"UTC", "Asia/Kathmandu", "America/St_Johns",
                                        "Pacific/Chatham", "Europe/Amsterdam"};
    apr_time_t want = APR_INT64_C(1795333222123) * 1000, old = APR_INT64_C(-2208988800) * 1000000;
    apr_size_t i;
    apr_time_t t;

    for (i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
        const char *v;
        set(db, apr_psprintf(bank_db_pool(db), "SET TIME ZONE '%s'", zones[i]));
        v = value(db, "SELECT CAST('2026-11-22T07:40:22.123Z' AS timestamptz)");
        CHECK(v && bank_time_parse(v, &t) == 0 && t == want);
        /* 1900-01-01T00:00:00Z: local mean time in Amsterdam, +00:19:32 */
        v = value(db, "SELECT CAST('1900-01-01T00:00:00Z' AS timestamptz)");
        CHECK(v && bank_time_parse(v, &t) == 0 && t == old);
    }
    CHECK_STR(value(db, "SELECT CAST('1900-01-01T00:00:00Z' AS timestamptz)"),
              "1900-01-01 00:19:32+00:19:32");
    /* The session set-up wins over a server or role DateStyle that is not ISO. */
    set(db, "SET DateStyle = 'SQL, DMY'");
    set(db, BANK_PG_SESSION_SQL);
    CHECK_STR(value(db, "SELECT CAST('2026-11-22' AS date)"), "2026-11-22");
    set(db, "SET TIME ZONE 'UTC'");
}

static void test_values(bank_db_t *db)
{
    apr_array_header_t *rows;
    bank_customer_t c;

    CHECK(bank_db_bool(value(db, "SELECT TRUE")) == 1);
    CHECK(bank_db_bool(value(db, "SELECT FALSE")) == 0);
    CHECK(bank_db_bool("1") == 1 && bank_db_bool("true") == 1);
    CHECK(bank_db_bool("0") == 0 && bank_db_bool(NULL) == 0 && bank_db_bool("") == 0);
    /* D2: NULL is NULL and '' is "", though apr_dbd_get_entry gives "" for both */
    CHECK(value(db, "SELECT NULL") == NULL);
    CHECK_STR(value(db, "SELECT ''"), "");
    CHECK(bank_store_notices_list(db, 1, &rows) == BANK_DB_OK);
    CHECK(bank_store_customer_by_email(db, "nobody-at-all@example.invalid", &c) ==
          BANK_DB_NOT_FOUND);
}

/* D1: a statement that fails at run time, not at prepare time, is reported (the pgsql driver
 * says nothing with random=0), on its own and as a prepared one, and its text kept. */
static void test_errors(bank_db_t *db)
{
    const char *v = NULL, *x[] = {"not a number"};
    apr_array_header_t *rows;
    static const bank_col_t cols[] = {BANK_COL(TEXT, bank_customer_t, id), BANK_COL_LAST};

    CHECK(bank_db_query_value(db, "SELECT CAST('not a number' AS integer)", &v) != 0);
    CHECK(bank_db_error(db) && strstr(bank_db_error(db), "invalid input syntax"));
    CHECK(bank_db_prepare(db, "unit_cast", "SELECT CAST(CAST(%s AS text) AS integer)", 0) == NULL);
    CHECK(bank_db_rows(db, "unit_cast", 1, x, cols, sizeof(bank_customer_t), &rows) ==
          BANK_DB_ERROR);
    CHECK(bank_db_error(db) && strstr(bank_db_error(db), "invalid input syntax"));
}

/* D6: libpq's functions are looked up once per process, whichever threads ask first and at
 * once: every thread gets the connection's socket. Run before anything else asks. */
typedef struct {
    const apr_dbd_driver_t *driver;
    apr_dbd_t *handle;
    int fd;
} libpq_ask_t;

static void *APR_THREAD_FUNC libpq_ask(apr_thread_t *t, void *data)
{
    libpq_ask_t *a = data;

    a->fd = bank_drv_pg_socket(a->driver, a->handle);
    apr_thread_exit(t, APR_SUCCESS);
    return NULL;
}

static void test_libpq_threads(apr_pool_t *p, const char *params)
{
    const apr_dbd_driver_t *driver = NULL;
    apr_dbd_t *handle = NULL;
    const char *err = NULL;
    apr_thread_t *t[8];
    libpq_ask_t a[8];
    apr_status_t rv;
    int i;

    CHECK(bank_drv_load(p, "pgsql", &driver) == NULL);
    CHECK(driver && bank_drv_open(driver, p, params, &handle, &err) == APR_SUCCESS);
    if (!handle) {
        return;
    }
    for (i = 0; i < 8; i++) {
        a[i].driver = driver;
        a[i].handle = handle;
        a[i].fd = -2;
        CHECK(apr_thread_create(&t[i], NULL, libpq_ask, &a[i], p) == APR_SUCCESS);
    }
    for (i = 0; i < 8; i++) {
        apr_thread_join(&rv, t[i]);
        CHECK(a[i].fd >= 0 && a[i].fd == a[0].fd);
    }
    CHECK(bank_drv_pg_can_cancel());
    bank_drv_close(driver, handle);
}

/* Ends the session of a's backend from b, as a server restart or a network cut does, and
 * waits until it is gone. */
static void kill_backend(apr_pool_t *p, bank_db_t *a, bank_db_t *b)
{
    const char *pid = value(a, "SELECT pg_backend_pid()"), *gone = NULL;
    int i;

    CHECK(pid != NULL);
    CHECK_STR(value(b, apr_psprintf(p, "SELECT pg_terminate_backend(%s)", pid ? pid : "0")), "t");
    for (i = 0; i < 100 && !(gone && strcmp(gone, "0") == 0); i++) {
        usleep(20000);
        gone = value(b, apr_psprintf(p, "SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                                     pid ? pid : "0"));
    }
}

/* A connection the server closed under it is re-opened and its session rebuilt by the data
 * layer itself (bank_db_conn.c), whatever lent it: a read or a BEGIN then runs once more and
 * succeeds; a statement inside a transaction is not repeated (the transaction is gone with
 * the session), it fails, and the next transaction works. apr_dbd_pgsql's own
 * transaction_start would crash the process on such a connection. */
static void test_lost_connection(apr_pool_t *p, const char *params)
{
    bank_db_t *a = open_db(p, params), *b = open_db(p, params);
    apr_array_header_t *banks;
    int before;

    CHECK(a && b);
    if (!a || !b) {
        return;
    }
    CHECK(bank_db_prepare_all(a) == NULL);
    CHECK(bank_db_begin(a) == BANK_DB_OK && bank_db_in_txn(a));
    CHECK(bank_db_end(a, 1) == BANK_DB_OK && !bank_db_in_txn(a));

    /* a BEGIN on the lost connection: restored, run again */
    unit_log_clear();
    kill_backend(p, a, b);
    CHECK(bank_db_begin(a) == BANK_DB_OK && bank_db_in_txn(a));
    CHECK(bank_store_banks_active(a, &banks) == BANK_DB_OK);
    CHECK(bank_db_end(a, 1) == BANK_DB_OK);
    CHECK(unit_logged("BANK0806: database connection was re-opened"));
    CHECK(bank_db_conn_lost(a));

    /* a read on the lost connection: restored, run again (two statements counted) */
    unit_log_clear();
    kill_backend(p, a, b);
    before = bank_db_statements(a);
    CHECK(bank_store_banks_active(a, &banks) == BANK_DB_OK);
    CHECK(bank_db_statements(a) == before + 2);
    CHECK(unit_logged("BANK0806"));

    /* inside a transaction: the statement fails, the transaction can only roll back */
    CHECK(bank_db_begin(a) == BANK_DB_OK);
    kill_backend(p, a, b);
    CHECK(bank_store_banks_active(a, &banks) != BANK_DB_OK);
    CHECK(bank_db_end(a, 1) == BANK_DB_ERROR && !bank_db_in_txn(a));
    CHECK(bank_db_begin(a) == BANK_DB_OK);
    CHECK(bank_store_banks_active(a, &banks) == BANK_DB_OK);
    CHECK(bank_db_end(a, 1) == BANK_DB_OK);
}

/* A write refused by a server in recovery (here a session made read-only, as a standby's
 * are): 503's kind (busy), the log's reason, and the connection closed, so that the next use
 * opens a new one (which reaches a writable server through the conninfo's host list). */
static void test_read_only(apr_pool_t *p, const char *params)
{
    bank_db_t *a = open_db(p, params);
    apr_array_header_t *banks;
    const char *pid;

    CHECK(a != NULL);
    if (!a) {
        return;
    }
    CHECK(bank_db_prepare_all(a) == NULL);
    pid = value(a, "SELECT pg_backend_pid()");
    set(a, "SET default_transaction_read_only = on");
    {
        const char *id = "1", *at = "2026-11-25T10:00:00.000Z";
        CHECK(bank_store_token_uses(a, 1, &id, &at) == BANK_DB_BUSY);
    }
    CHECK(bank_db_error(a) && strstr(bank_db_error(a), "read-only transaction") &&
          strstr(bank_db_error(a), "in recovery") && strstr(bank_db_error(a), "closed"));
    CHECK(bank_db_conn_lost(a));
    /* the next statement finds it closed, opens a new session and runs */
    unit_log_clear();
    CHECK(bank_store_banks_active(a, &banks) == BANK_DB_OK);
    CHECK(unit_logged("BANK0806"));
    CHECK(pid && value(a, "SELECT pg_backend_pid()") &&
          strcmp(pid, value(a, "SELECT pg_backend_pid()")) != 0);
    CHECK_STR(value(a, "SHOW default_transaction_read_only"), "off");
}

typedef struct {
    bank_db_t *holder;
    int waited;
} lock_holder_t;

static void *APR_THREAD_FUNC release_later(apr_thread_t *t, void *data)
{
    lock_holder_t *h = data;

    usleep(400000);
    h->waited = 1;
    CHECK(bank_db_query(h->holder, "COMMIT") == 0);
    apr_thread_exit(t, APR_SUCCESS);
    return NULL;
}

static void said(void *baton, const char *line)
{
    if (strstr(line, "waiting for the tables' locks")) {
        *(int *)baton = 1;
    }
}

/* A migration whose table another session holds (the old module's traffic): its script
 * gives the lock up after 100 ms instead of queueing every statement behind it, is rolled
 * back and tried again, says so, and is applied once the table is free. */
static void test_migrate_waits(apr_pool_t *p, bank_db_t *db, const char *params)
{
    const char *src = getenv("BANK_TEST_SQL_DIR") ? getenv("BANK_TEST_SQL_DIR") : "sql";
    char *root = apr_pstrdup(p, "/tmp/mod_bank-unit-migrate.XXXXXX");
    lock_holder_t h = {open_db(p, params), 0};
    bank_db_t *mig = open_db(p, params); /* its statements prepared by the migration itself */
    bank_migrate_result_t res = {NULL, 0};
    apr_thread_t *t;
    apr_status_t rv;
    int told = 0;

    CHECK(mkdtemp(root) != NULL && h.holder != NULL && mig != NULL);
    if (!h.holder || !mig) {
        return;
    }
    CHECK(system(apr_psprintf(p,
                              "mkdir %s/postgresql && ln -s $(realpath %s/postgresql)/*.sql "
                              "%s/postgresql/ && ln -s $(realpath %s/seed) %s/seed && echo "
                              "'ALTER TABLE unit_lock ADD COLUMN y integer;' "
                              ">%s/postgresql/900_unit_lock.sql",
                              root, src, root, src, root, root)) == 0);
    set(db, "CREATE TABLE unit_lock (x integer)");
    set(h.holder, "BEGIN");
    set(h.holder, "LOCK TABLE unit_lock IN ACCESS SHARE MODE");
    CHECK(apr_thread_create(&t, NULL, release_later, &h, p) == APR_SUCCESS);
    CHECK(bank_migrate(mig, root, 0, said, &told, &res) == 0);
    if (res.error) {
        fprintf(stderr, "migrate: %s\n", res.error);
    }
    apr_thread_join(&rv, t);
    CHECK(h.waited && told);
    CHECK_STR(value(db, "SELECT count(*) FROM information_schema.columns WHERE table_name = "
                        "'unit_lock' AND column_name = 'y'"),
              "1");
    set(db, "DELETE FROM schema_version WHERE version = 900");
    set(db, "DROP TABLE unit_lock");
    CHECK(system(apr_psprintf(p, "rm -rf %s", root)) == 0);
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
    test_libpq_threads(p, params);
    db = open_db(p, params);
    CHECK(db != NULL);
    if (!db) {
        return;
    }
    test_statements(db);
    test_errors(db);
    test_timestamps(db);
    test_values(db);
    test_lost_connection(p, params);
    test_read_only(p, params);
    test_migrate_waits(p, db, params);
}
