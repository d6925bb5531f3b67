/* The query helpers (sql.c) on SQLite when the database refuses writes: a write refused as
 * read-only is flagged (db->read_only: the module answers 503 and replaces the connection,
 * mod_bank/db.c), any other failed statement is not, and reads still work. The read-only
 * connection is opened with a mode=ro URI: what SQLite does with a file it cannot write,
 * and it works as root too (root writes any file whatever its mode). */
#include "unit.h"

#include <stdlib.h>
#include <unistd.h>
#include <apr_strings.h>
#include <apr_dbd.h>

#include "bank_sql.h"

static apr_status_t close_db(void *data)
{
    bank_db_t *db = data;
    apr_dbd_close(db->driver, db->handle);
    return APR_SUCCESS;
}

/* Prepares sql under label. Each write below has a statement of its own: the sqlite3
 * driver resets a statement before running it, and that reset reports the statement's
 * last failure again. */
static void prepare(bank_db_t *db, const char *sql, const char *label)
{
    apr_dbd_prepared_t *st = NULL;

    apr_dbd_prepare(db->driver, db->pool, db->handle, sql, label, &st);
    apr_hash_set(db->prepared, label, APR_HASH_KEY_STRING, st);
}

/* A connection to a new database file with one table and its statements. */
static bank_db_t *open_db(apr_pool_t *p, const char *path)
{
    bank_db_t *db = apr_pcalloc(p, sizeof(*db));
    const char *err = NULL;
    int n = 0;

    if (apr_dbd_get_driver(p, "sqlite3", &db->driver) != APR_SUCCESS ||
        apr_dbd_open_ex(db->driver, p, path, &db->handle, &err) != APR_SUCCESS) {
        fprintf(stderr, "cannot open %s: %s\n", path, err ? err : "no driver");
        return NULL;
    }
    apr_pool_cleanup_register(p, db, close_db, apr_pool_cleanup_null);
    db->pool = p;
    db->prepared = apr_hash_make(p);
    apr_dbd_query(db->driver, db->handle, &n, "CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY)");
    prepare(db, "INSERT INTO t (k) VALUES (%s)", "ins");
    prepare(db, "INSERT INTO t (k) VALUES (%s)", "dup");
    prepare(db, "INSERT INTO t (k) VALUES (%s)", "ro");
    prepare(db, "INSERT INTO t (k) VALUES (%s)", "ro_txn");
    prepare(db, "INSERT INTO t (k) VALUES (%s)", "after");
    prepare(db, "SELECT count(*) FROM t", "count");
    return db;
}

static void run_tests(apr_pool_t *p)
{
    char *path = apr_psprintf(p, "/tmp/bank-unit-sqlite-%ld.db", (long)getpid());
    const char *a[] = {"one"}, *b[] = {"two"};
    bank_rows_t rows;
    bank_db_t *rw, *ro;

    apr_dbd_init(p);
    unlink(path);
    if (!(rw = open_db(p, path)) ||
        !(ro = open_db(p, apr_pstrcat(p, "file:", path, "?mode=ro", (char *)NULL)))) {
        CHECK(!"SQLite connections");
        return;
    }
    CHECK(bank_db_exec(rw, "ins", NULL, 1, a) == BANK_DB_OK);
    CHECK(!rw->read_only);
    /* a constraint failure is an error, not a read-only database */
    CHECK(bank_db_exec(rw, "dup", NULL, 1, a) == BANK_DB_ERROR);
    CHECK(!rw->read_only);

    CHECK(bank_db_exec(ro, "ro", NULL, 1, b) == BANK_DB_ERROR);
    CHECK(ro->read_only);
    CHECK(ro->error && strstr(ro->error, "readonly"));
    /* reads go on */
    CHECK(bank_db_select(ro, "count", &rows, 0, NULL) == BANK_DB_OK);
    CHECK_STR(bank_rows_get(&rows, 0, 0), "1");

    /* inside a transaction too: it rolls back, flagged the same */
    ro->read_only = 0;
    CHECK(bank_db_begin(ro) == BANK_DB_OK);
    CHECK(bank_db_exec(ro, "ro_txn", NULL, 1, b) == BANK_DB_ERROR);
    CHECK(bank_db_end(ro, 1) == BANK_DB_ERROR);
    CHECK(ro->read_only);

    /* nothing was written; the other connection still writes */
    CHECK(bank_db_exec(rw, "after", NULL, 1, b) == BANK_DB_OK);
    CHECK(bank_db_select(rw, "count", &rows, 0, NULL) == BANK_DB_OK);
    CHECK_STR(bank_rows_get(&rows, 0, 0), "2");
    unlink(path);
}
