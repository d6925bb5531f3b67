/* The data layer's handle (bank_db.h): statements by label with one retry after a re-opened
 * connection, rows read to the end and decoded by descriptor, SQL of our own. Above the driver
 * (bank_db_driver.c) and the bound on a PostgreSQL statement's wait (bank_db_wait.c); below
 * transactions (bank_db_txn.c) and connections (bank_db_conn.c), whose recovery it calls
 * through the hook they set (bank_db_internal.h). Statements are prepared once per connection
 * (mod_dbd does it for the module, bank_db_prepare_all for bankctl and the tests); no SQL text
 * is ever built from input. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <apr_strings.h>
#include <apr_tables.h>
#include "bank_db.h"
#include "bank_sql.h"
#include "bank_db_internal.h"

/* ---- handles ---- */

bank_db_t *bank_db_wrap(apr_pool_t *p, const apr_dbd_driver_t *driver, apr_dbd_t *handle,
                        apr_hash_t *prepared)
{
    bank_db_t *db = apr_pcalloc(p, sizeof(*db));

    db->pool = p;
    db->driver = driver;
    db->handle = handle;
    db->prepared = prepared ? prepared : apr_hash_make(p);
    return db;
}

const char *bank_db_prepare(bank_db_t *db, const char *label, const char *sql, int named)
{
    apr_dbd_prepared_t *st = NULL;
    int rv = bank_drv_prepare(db->driver, db->pool, db->handle, sql, named ? label : NULL, &st);

    if (rv != 0 || !st) {
        return bank_drv_error(db->pool, db->driver, db->handle, rv);
    }
    apr_hash_set(db->prepared, label, APR_HASH_KEY_STRING, st);
    if (named && db->conn) { /* prepared again on a connection that is re-opened */
        if (!db->conn->statements) {
            db->conn->statements = apr_hash_make(db->conn->pool);
        }
        apr_hash_set(db->conn->statements, apr_pstrdup(db->conn->pool, label), APR_HASH_KEY_STRING,
                     apr_pstrdup(db->conn->pool, sql));
    }
    return NULL;
}

bank_conn_state bank_db_recover(bank_db_t *db)
{
    bank_conn_state st = db->conn && db->recover ? db->recover(db) : BANK_CONN_INTACT;

    if (st == BANK_CONN_DOWN || st == BANK_CONN_RESTORED) {
        db->conn_lost = 1;
    }
    return st;
}

apr_pool_t *bank_db_pool(const bank_db_t *db)
{
    return db->pool;
}

apr_pool_t *bank_db_use_pool(bank_db_t *db, apr_pool_t *p)
{
    apr_pool_t *before = db->pool;

    if (db->in_txn) {
        return NULL; /* what the transaction holds lives in the pool it began with */
    }
    db->pool = p;
    db->error = NULL;
    db->bound.cause = NULL;
    /* the cleanup that rolls back a forgotten transaction goes with the pool in use */
    db->txn_cleanup = 0;
    return before;
}

int bank_db_transient(bank_db_t *db, bank_db_rc rc)
{
    if (rc == BANK_DB_BUSY || rc == BANK_DB_NO_STMT) {
        return 1;
    }
    /* a lost connection: worth retrying, and recovery leaves it whole for the next user */
    return bank_db_conn_lost(db) || bank_db_recover(db) != BANK_CONN_INTACT;
}

const void *bank_db_where(const bank_db_t *db)
{
    return db->where;
}

int bank_db_is_pgsql(const bank_db_t *db)
{
    return bank_drv_is_pgsql(db->driver);
}

const char *bank_db_error(const bank_db_t *db)
{
    return db->error;
}

int bank_db_conn_lost(const bank_db_t *db)
{
    return db->conn_lost;
}

int bank_db_in_txn(const bank_db_t *db)
{
    return db->in_txn;
}

int bank_db_read_only(const bank_db_t *db)
{
    return db->read_only;
}

int bank_db_statements(const bank_db_t *db)
{
    return db->statements;
}

int bank_db_expects(const bank_db_t *db)
{
    return db->conn && db->conn->statements && apr_hash_count(db->conn->statements) > 0;
}

void bank_db_watch_begin(bank_db_t *db, bank_db_watch_t *w)
{
    bank_db_bound_enter(&db->bound, db->driver, db->handle, w);
}

int bank_db_watch_end(bank_db_t *db, bank_db_watch_t *w, int rv, int commits)
{
    rv = bank_db_bound_leave(&db->bound, db->pool, w, rv, commits);
    if (db->bound.cut) {
        db->bound.cut = 0;
        db->conn_lost = 1;
    }
    return rv;
}

void bank_db_replace(bank_db_t *db, apr_dbd_t *handle, apr_hash_t *prepared)
{
    db->handle = handle;
    db->prepared = prepared;
    db->read_only = 0;
}

const char *bank_db_error_line(apr_pool_t *p, const char *msg)
{
    return bank_drv_error_line(p, msg);
}

bank_db_rc bank_db_fail(bank_db_t *db, const char *why)
{
    db->error = why;
    if (db->in_txn) {
        db->txn_failed = 1;
    }
    return BANK_DB_ERROR;
}

/* A server in recovery (a standby, a demoted primary) refuses every write: the connection
 * is closed, so that the pool opens a new one, through the conninfo's host list, rather than
 * lending this one again. The probe makes libpq notice at once (the pool's check then
 * re-opens it). */
static void pg_drop(bank_db_t *db)
{
    int fd = bank_drv_pg_socket(db->driver, db->handle);

    if (fd >= 0) {
        shutdown(fd, SHUT_RDWR);
        bank_drv_query(db->driver, db->handle, "SELECT 1", NULL);
    }
    db->conn_lost = 1;
}

/* ---- statements ---- */

bank_db_rc bank_db_classify(bank_db_t *db, int rv)
{
    return bank_db_classify_text(db, rv, NULL);
}

bank_db_rc bank_db_classify_text(bank_db_t *db, int rv, const char *text)
{
    if (db->bound.cause) {
        bank_db_fail(db, db->bound.cause);
        db->bound.cause = NULL;
        return BANK_DB_BUSY;
    }
    bank_db_fail(db, text ? text : bank_drv_error(db->pool, db->driver, db->handle, rv));
    if (bank_db_is_pgsql(db) && strstr(db->error, "read-only transaction")) {
        db->error = apr_pstrcat(db->pool, db->error,
                                " (the server is in recovery: a standby or a demoted primary; "
                                "connection closed)",
                                (char *)NULL);
        pg_drop(db);
        return BANK_DB_BUSY;
    }
    /* SQLITE_READONLY's own text (D7) */
    if (!bank_db_is_pgsql(db) && bank_drv_sqlite_read_only(db->error)) {
        db->read_only = 1;
    }
    /* SQLITE_BUSY (5) / SQLITE_LOCKED (6) after the driver's own retries and busy_timeout;
     * PostgreSQL reports lock and statement time-outs in the message text. */
    if ((!bank_db_is_pgsql(db) && bank_drv_sqlite_busy(rv)) || strstr(db->error, "locked") ||
        strstr(db->error, "timeout") || strstr(db->error, "canceling statement")) {
        return BANK_DB_BUSY;
    }
    return BANK_DB_ERROR;
}

/* After a failed statement: whether running it once more is both useful and safe. Only
 * outside a transaction (inside one, the transaction is gone with the connection), and only
 * when the module re-opened the connection: a FRESH one never ran the statement; after a
 * loss (RESTORED) a read or a BEGIN can be repeated, a write might have committed. */
int bank_db_retry(bank_db_t *db, bank_db_rc rc, int read_only)
{
    bank_conn_state st;

    if (rc != BANK_DB_ERROR || db->in_txn || !db->conn) {
        return 0;
    }
    st = bank_db_recover(db);
    return st == BANK_CONN_FRESH || (st == BANK_CONN_RESTORED && read_only);
}

/* A failed statement's kind and text; *again: whether to run it once more (recovery's own
 * queries leave the statement's error text as it was). */
static bank_db_rc failed(bank_db_t *db, int rv, int read_only, int *again)
{
    bank_db_rc rc = bank_db_classify(db, rv);
    const char *why = db->error;

    *again = bank_db_retry(db, rc, read_only);
    if (!*again) {
        db->error = why;
    }
    return rc;
}

static apr_dbd_prepared_t *lookup(bank_db_t *db, const char *label)
{
    apr_dbd_prepared_t *st =
        db->prepared ? apr_hash_get(db->prepared, label, APR_HASH_KEY_STRING) : NULL;
    if (!st) {
        db->error = apr_pstrcat(db->pool, "statement not prepared: ", label, (char *)NULL);
    }
    return st;
}

/* The sqlite3 driver's process-wide mutex (bank_db_driver.h, D8): within a process a
 * transaction holds writer_lock from its BEGIN to its end, and a statement outside one holds
 * it while it runs, so no thread waits on SQLite for a lock its own process holds. Waits
 * across processes stay SQLite's. No lock on PostgreSQL. */
int bank_db_hold(bank_db_t *db)
{
    if (!db->writer_lock || db->holding) {
        return 0;
    }
    apr_thread_mutex_lock(db->writer_lock);
    db->holding = 1;
    return 1;
}

void bank_db_release(bank_db_t *db)
{
    if (db->holding) {
        db->holding = 0;
        apr_thread_mutex_unlock(db->writer_lock);
    }
}

int bank_db_writable(bank_db_t *db)
{
    return bank_db_writable_handle(db, db->handle);
}

int bank_db_writable_handle(bank_db_t *db, apr_dbd_t *handle)
{
    int ok, mine = bank_db_hold(db);

    ok = bank_drv_query(db->driver, handle, "BEGIN IMMEDIATE", NULL) == 0;
    if (ok) {
        ok = bank_drv_query(db->driver, handle, "PRAGMA user_version = 0", NULL) == 0;
        bank_drv_query(db->driver, handle, "ROLLBACK", NULL);
    }
    if (mine) {
        bank_db_release(db);
    }
    return ok;
}

/* Whether the statement under label only reads (its text starts with SELECT). */
static int is_select(const char *label)
{
    const bank_stmt_t *st = bank_stmt_find(label);
    return st && strncasecmp(st->sql, "SELECT ", 7) == 0;
}

/* The text of column i of a row, NULL for SQL NULL on either driver (D2). */
static const char *column(bank_db_t *db, apr_dbd_row_t *row, int i)
{
    return bank_drv_column(db->driver, db->pool, row, i);
}

int bank_db_bool(const char *v)
{
    return v && (!strcmp(v, "1") || !strcasecmp(v, "t") || !strcasecmp(v, "true"));
}

static void decode(bank_db_t *db, apr_dbd_row_t *row, const bank_col_t *cols, void *out)
{
    int i;

    for (i = 0; cols[i].type != BANK_COL_END; i++) {
        const char *v = column(db, row, i);
        char *at = (char *)out + cols[i].offset;
        switch (cols[i].type) {
        case BANK_COL_TEXT:
            *(const char **)at = v;
            break;
        case BANK_COL_BOOL:
            *(int *)at = bank_db_bool(v);
            break;
        default:
            *(apr_int64_t *)at = v ? apr_atoi64(v) : 0;
            break;
        }
    }
}

static int count_cols(const bank_col_t *cols)
{
    int n = 0;
    while (cols[n].type != BANK_COL_END) {
        n++;
    }
    return n;
}

/* Reads every row, until -1, so no result is left pending on a pooled connection; each
 * decoded by cols into a struct of size bytes (or, with cols NULL, the first column's text
 * of the first row into *first). */
static bank_db_rc read_rows(bank_db_t *db, const char *label, apr_dbd_results_t *res,
                            const bank_col_t *cols, apr_size_t size, apr_array_header_t *rows,
                            const char **first)
{
    apr_dbd_row_t *row = NULL;
    int ncols = bank_drv_num_cols(db->driver, res), bad = cols && ncols != count_cols(cols);

    while (bank_drv_next_row(db->driver, db->pool, res, &row) == 0) {
        if (bad) {
            continue;
        }
        if (!cols) {
            if (first && !*first) {
                *first = ncols > 0 ? column(db, row, 0) : NULL;
            }
            continue;
        }
        decode(db, row, cols, memset(apr_array_push(rows), 0, size));
    }
    if (bad) {
        return bank_db_fail(db,
                            apr_psprintf(db->pool, "%s returns %d columns, its descriptor names %d",
                                         label, ncols, count_cols(cols)));
    }
    return BANK_DB_OK;
}

static bank_db_rc run_select(bank_db_t *db, const char *label, int nargs, const char *const *args,
                             apr_dbd_results_t **res)
{
    apr_dbd_prepared_t *st = lookup(db, label);
    bank_db_watch_t w;
    bank_db_rc rc;
    int rv, again, tries;

    if (!st) {
        return BANK_DB_NO_STMT;
    }
    db->statements++;
    bank_db_watch_begin(db, &w);
    rv = bank_drv_pselect(db->driver, db->pool, db->handle, st, nargs, args, res);
    rv = bank_db_watch_end(db, &w, rv, !db->in_txn && !is_select(label));
    if (rv == 0) {
        return BANK_DB_OK;
    }
    /* looked up again: recovery may have replaced the connection and its statements */
    rc = failed(db, rv, is_select(label), &again);
    for (tries = 1; again && (st = lookup(db, label)) != NULL; tries++) {
        *res = NULL;
        db->statements++;
        bank_db_watch_begin(db, &w);
        rv = bank_drv_pselect(db->driver, db->pool, db->handle, st, nargs, args, res);
        rv = bank_db_watch_end(db, &w, rv, !db->in_txn && !is_select(label));
        if (rv == 0) {
            return BANK_DB_OK;
        }
        rc = tries < BANK_DB_FRESH_TRIES ? failed(db, rv, is_select(label), &again)
                                         : bank_db_classify(db, rv);
        again = again && tries < BANK_DB_FRESH_TRIES;
    }
    return rc;
}

bank_db_rc bank_db_rows(bank_db_t *db, const char *label, int nargs, const char *const *args,
                        const bank_col_t *cols, apr_size_t size, apr_array_header_t **out)
{
    apr_dbd_results_t *res = NULL;
    int mine = bank_db_hold(db); /* no-op inside a transaction, which holds it already */
    bank_db_rc rc = run_select(db, label, nargs, args, &res);

    *out = apr_array_make(db->pool, 8, (int)size);
    if (rc == BANK_DB_OK) {
        rc = read_rows(db, label, res, cols, size, *out, NULL);
    }
    if (mine) {
        bank_db_release(db);
    }
    return rc;
}

bank_db_rc bank_db_row(bank_db_t *db, const char *label, int nargs, const char *const *args,
                       const bank_col_t *cols, void *out, apr_size_t size)
{
    apr_array_header_t *rows;
    bank_db_rc rc = bank_db_rows(db, label, nargs, args, cols, size, &rows);

    memset(out, 0, size);
    if (rc != BANK_DB_OK) {
        return rc;
    }
    if (rows->nelts == 0) {
        return BANK_DB_NOT_FOUND;
    }
    memcpy(out, rows->elts, size);
    return BANK_DB_OK;
}

bank_db_rc bank_db_exec(bank_db_t *db, const char *label, int *affected, int nargs,
                        const char *const *args)
{
    apr_dbd_prepared_t *st = lookup(db, label);
    bank_db_rc rc = BANK_DB_OK;
    bank_db_watch_t w;
    int n = 0, rv, mine, again, tries;

    if (!st) {
        return BANK_DB_NO_STMT;
    }
    mine = bank_db_hold(db);
    db->statements++;
    bank_db_watch_begin(db, &w);
    rv = bank_drv_pquery(db->driver, db->pool, db->handle, st, nargs, args, &n);
    rv = bank_db_watch_end(db, &w, rv, !db->in_txn);
    if (rv != 0) {
        rc = failed(db, rv, 0, &again);
        for (tries = 1; again && (st = lookup(db, label)) != NULL; tries++) {
            db->statements++;
            bank_db_watch_begin(db, &w);
            rv = bank_drv_pquery(db->driver, db->pool, db->handle, st, nargs, args, &n);
            rv = bank_db_watch_end(db, &w, rv, !db->in_txn);
            if (rv == 0) {
                rc = BANK_DB_OK;
                break;
            }
            rc = tries < BANK_DB_FRESH_TRIES ? failed(db, rv, 0, &again) : bank_db_classify(db, rv);
            again = again && tries < BANK_DB_FRESH_TRIES;
        }
    }
    if (mine) {
        bank_db_release(db);
    }
    if (affected) {
        *affected = n;
    }
    return rc;
}

/* ---- bookkeeping SQL ---- */

/* The driver's text for a failed bookkeeping call (or the guard's, when it cut it). */
static void query_failed(bank_db_t *db, int rv)
{
    db->error =
        db->bound.cause ? db->bound.cause : bank_drv_error(db->pool, db->driver, db->handle, rv);
    db->bound.cause = NULL;
}

int bank_db_query(bank_db_t *db, const char *sql)
{
    bank_db_watch_t w;
    int rv;

    bank_db_watch_begin(db, &w);
    rv = bank_db_watch_end(db, &w, bank_drv_query(db->driver, db->handle, sql, NULL), 0);
    if (rv != 0) {
        query_failed(db, rv);
    }
    return rv;
}

int bank_db_query_value(bank_db_t *db, const char *sql, const char **value)
{
    apr_dbd_results_t *res = NULL;
    bank_db_watch_t w;
    int rv;

    bank_db_watch_begin(db, &w);
    rv = bank_db_watch_end(db, &w, bank_drv_select(db->driver, db->pool, db->handle, sql, &res), 0);
    *value = NULL;
    if (rv != 0) {
        query_failed(db, rv);
        return rv;
    }
    read_rows(db, sql, res, NULL, 0, NULL, value);
    return 0;
}

int bank_db_schema_version(bank_db_t *db)
{
    const char *v = NULL;

    return bank_db_query_value(db, "SELECT MAX(version) FROM schema_version", &v) == 0 && v
               ? atoi(v)
               : 0;
}
