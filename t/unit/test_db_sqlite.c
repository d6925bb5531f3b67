/* The data layer (bank_db.c) on SQLite, and the sqlite3 driver's quirks it works around
 * (bank_db_driver.h: D2, D4, D7, D9; mod_bank_dbd.h: M6). When the database refuses writes: a write
 * refused as read-only is flagged (bank_db_read_only: the module answers 503 and replaces the
 * connection, mod_bank/mod_bank_db.c), any other failed statement is not, and reads still
 * work. The read-only connection is opened with a mode=ro URI: what SQLite does with a file
 * it cannot write, and it works as root too (root writes any file whatever its mode). */
#include "unit.h"

#include <stdlib.h>
#include <unistd.h>
#include <apr_strings.h>

#include "bank_db_source.h"
#include "bank_sql.h"

typedef struct {
    const char *count;
} count_row_t;
static const bank_col_t count_cols[] = {BANK_COL(TEXT, count_row_t, count), BANK_COL_LAST};

/* A connection to a database file with one table and its statements. Each write below has
 * a statement of its own: the sqlite3 driver resets a statement before running it, and that
 * reset reports the statement's last failure again. */
static bank_db_t *open_db(apr_pool_t *p, const char *path)
{
    static const char *const writes[] = {"ins", "dup", "ro", "ro_txn", "after", "txn"};
    const char *err = NULL;
    bank_db_t *db = bank_db_open(p, "sqlite3", path, &err);
    size_t i;

    if (!db) {
        fprintf(stderr, "cannot open %s: %s\n", path, err);
        return NULL;
    }
    bank_db_query(db, "CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY)");
    for (i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
        bank_db_prepare(db, writes[i], "INSERT INTO t (k) VALUES (%s)", 1);
    }
    bank_db_prepare(db, "count", "SELECT count(*) FROM t", 1);
    return db;
}

static const char *count(bank_db_t *db)
{
    count_row_t row;
    return bank_db_row(db, "count", 0, NULL, count_cols, &row, sizeof(row)) == BANK_DB_OK
               ? row.count
               : NULL;
}

/* A connection given back mid-transaction: rolled back and closed, so its write lock is gone
 * and what it wrote with it. */
static void test_give_back(apr_pool_t *p, const char *path, bank_db_t *rw)
{
    const char *c[] = {"given"}, *d[] = {"after give"};
    bank_db_t *db = open_db(p, path);

    CHECK(db && bank_db_begin(db) == BANK_DB_OK);
    CHECK(db && bank_db_exec(db, "ins", NULL, 1, c) == BANK_DB_OK);
    if (db) {
        bank_db_give(db);
    }
    (void)bank_db_query(rw, "PRAGMA busy_timeout = 0"); /* returns a row: not an error */
    CHECK(bank_db_exec(rw, "ins", NULL, 1, d) == BANK_DB_OK);
    CHECK_STR(count(rw), "3");
}

/* A schema change (another connection's migration) expires every statement the sqlite3
 * driver prepared: the connection is replaced and the statement runs, unnoticed. */
static void test_schema_change(bank_db_t *rw)
{
    const char *e[] = {"after schema"};

    unit_log_clear();
    CHECK(bank_db_query(rw, "CREATE TABLE unit_schema_change (x INTEGER)") == 0);
    CHECK_STR(count(rw), "3");
    CHECK(unit_logged("BANK0808: SQLite connection prepared before the schema changed"));
    CHECK(bank_db_query(rw, "DROP TABLE unit_schema_change") == 0);
    CHECK(bank_db_exec(rw, "after", NULL, 1, e) == BANK_DB_OK);
    CHECK_STR(count(rw), "4");
}

typedef struct {
    const char *k;
    int calls;
} insert_t;

static bank_db_rc insert_txn(bank_db_t *db, void *baton)
{
    insert_t *in = baton;
    const char *k[] = {in->k};

    in->calls++;
    return bank_db_exec(db, "txn", NULL, 1, k);
}

/* The same inside a transaction (a sign-in issuing its token while bankctl migrate commits):
 * the statement fails and the transaction with it; rolled back, it runs once more on the new
 * connection and commits once. */
static void test_schema_change_txn(apr_pool_t *p, const char *path, bank_db_t *rw)
{
    bank_db_t *other = open_db(p, path);
    const char *before = apr_pstrdup(p, count(rw));
    insert_t in = {"in a transaction after schema", 0};

    unit_log_clear();
    CHECK(other && bank_db_query(other, "CREATE TABLE unit_schema_change_txn (x INTEGER)") == 0);
    CHECK(bank_db_transaction(rw, insert_txn, &in) == BANK_DB_OK && in.calls == 2);
    CHECK(unit_logged("BANK0808: SQLite connection prepared before the schema changed"));
    CHECK_STR(count(rw), apr_itoa(p, atoi(before) + 1));
    /* a failure of another kind (the same key again) is not run again */
    in.calls = 0;
    CHECK(bank_db_transaction(rw, insert_txn, &in) == BANK_DB_ERROR && in.calls == 1);
    CHECK_STR(count(rw), apr_itoa(p, atoi(before) + 1));
}

/* apr_dbd's sqlite3 driver as bank_db_driver.h says: SQL NULL reads as NULL and '' as ""
 * (D2), and a statement that returns a row fails apr_dbd_query (D9). */
static void test_null(bank_db_t *db)
{
    const char *v = "unset";

    CHECK(bank_db_query_value(db, "SELECT NULL", &v) == 0 && v == NULL);
    CHECK(bank_db_query_value(db, "SELECT ''", &v) == 0 && v && *v == '\0');
    CHECK(bank_db_query(db, "PRAGMA busy_timeout = 5000") != 0);
    CHECK(bank_db_query_value(db, "PRAGMA busy_timeout", &v) == 0 && v && !strcmp(v, "5000"));
}

/* A BEGIN refused while another connection holds the write lock (D4): BUSY, and no
 * transaction is left on the handle. Left there, the driver would keep the next failure
 * (here a duplicate key) as the transaction's and return it for every later statement: the
 * connection would look prepared before a schema change, and be replaced (BANK0808). */
static void test_begin_busy(apr_pool_t *p, const char *path, bank_db_t *rw)
{
    const char *a[] = {"busy begin"}, *b[] = {"after busy"}, *one[] = {"one"};
    bank_db_t *db = open_db(p, path);

    CHECK(db != NULL);
    if (!db) {
        return;
    }
    (void)bank_db_query(db, "PRAGMA busy_timeout = 0"); /* returns a row (D9) */
    unit_log_clear();
    CHECK(bank_db_begin(rw) == BANK_DB_OK);
    CHECK(bank_db_exec(rw, "ins", NULL, 1, a) == BANK_DB_OK);
    CHECK(bank_db_begin(db) == BANK_DB_BUSY && !bank_db_in_txn(db));
    CHECK(bank_db_end(rw, 1) == BANK_DB_OK);
    CHECK(bank_db_exec(db, "dup", NULL, 1, one) == BANK_DB_ERROR);
    CHECK(bank_db_exec(db, "ins", NULL, 1, b) == BANK_DB_OK);
    CHECK(bank_db_begin(db) == BANK_DB_OK);
    CHECK(bank_db_end(db, 0) == BANK_DB_OK);
    CHECK(!unit_logged("BANK0808"));
}

/* A transaction left open when the handle's pool goes (mod_bank_dbd.h, M6): with DBDPersist
 * Off mod_dbd keeps the connection in a subpool of that pool, destroyed before the pool's own
 * cleanups run, as bank_db_open's source does here. The rollback runs before it, on the
 * connection still open (a cleanup would run on a closed one): nothing written, no lock kept.
 * What this shows is the outcome; SQLite itself also rolls back a connection it closes. */
static void test_pool_gone(apr_pool_t *p, const char *path, bank_db_t *rw)
{
    const char *b[] = {"after pool gone"}, *before = count(rw), *err = NULL;
    apr_pool_t *sub;
    bank_db_t *db;

    apr_pool_create(&sub, p);
    db = bank_db_open(sub, "sqlite3", path, &err);
    CHECK(db && bank_db_begin(db) == BANK_DB_OK);
    CHECK(db && bank_db_query(db, "INSERT INTO t (k) VALUES ('pool gone')") == 0);
    apr_pool_destroy(sub);
    CHECK_STR(count(rw), before);
    CHECK(bank_db_exec(rw, "ins", NULL, 1, b) == BANK_DB_OK);
}

static void run_tests(apr_pool_t *p)
{
    char *path = apr_psprintf(p, "/tmp/bank-unit-sqlite-%ld.db", (long)getpid());
    const char *a[] = {"one"}, *b[] = {"two"};
    bank_db_t *rw, *ro;

    unlink(path);
    if (!(rw = open_db(p, path)) ||
        !(ro = open_db(p, apr_pstrcat(p, "file:", path, "?mode=ro", (char *)NULL)))) {
        CHECK(!"SQLite connections");
        return;
    }
    CHECK(bank_db_exec(rw, "ins", NULL, 1, a) == BANK_DB_OK);
    CHECK(!bank_db_read_only(rw));
    /* a constraint failure is an error, not a read-only database */
    CHECK(bank_db_exec(rw, "dup", NULL, 1, a) == BANK_DB_ERROR);
    CHECK(!bank_db_read_only(rw));
    CHECK(bank_db_writable(rw));

    CHECK(bank_db_exec(ro, "ro", NULL, 1, b) == BANK_DB_ERROR);
    CHECK(bank_db_read_only(ro));
    CHECK(bank_db_error(ro) && strstr(bank_db_error(ro), "readonly"));
    CHECK(!bank_db_writable(ro));
    /* reads go on */
    CHECK_STR(count(ro), "1");

    /* inside a transaction too (on a connection not yet flagged): it rolls back, flagged
     * the same */
    ro = open_db(p, apr_pstrcat(p, "file:", path, "?mode=ro", (char *)NULL));
    CHECK(ro && bank_db_begin(ro) == BANK_DB_OK);
    CHECK(ro && bank_db_exec(ro, "ro_txn", NULL, 1, b) == BANK_DB_ERROR);
    CHECK(ro && bank_db_end(ro, 1) == BANK_DB_ERROR);
    CHECK(ro && bank_db_read_only(ro));

    /* nothing was written; the other connection still writes */
    CHECK(bank_db_exec(rw, "after", NULL, 1, b) == BANK_DB_OK);
    CHECK_STR(count(rw), "2");
    test_give_back(p, path, rw);
    test_schema_change(rw);
    test_schema_change_txn(p, path, rw);
    test_null(rw);
    test_begin_busy(p, path, rw);
    test_pool_gone(p, path, rw);
    unlink(path);
}
