/* The data layer's connections (bank_db_source.h): a source lends them, this file sets up
 * their session, prepares their statements, and recovers one that was lost, re-opened under
 * us, or opened read-only; and the source of one's own (bank_db_open) for bankctl and the
 * C tests. The module's source is mod_dbd's pool (mod_bank_db.c). The top of the data layer:
 * it calls transactions (bank_db_txn.c), the handle (bank_db.c) and the driver
 * (bank_db_driver.c), and hands the handle its recovery as a hook (bank_db_internal.h). */
#include <string.h>
#include <unistd.h>
#include <apr_strings.h>
#include "bank_db_source.h"
#include "bank_db_internal.h"
#include "bank_sql.h"

int bank_db_conn_is_pgsql(const bank_db_conn_t *conn)
{
    return bank_drv_is_pgsql(conn->driver);
}

/* The driver's last error on handle, first line only (PostgreSQL's DETAIL quotes values). */
static const char *last_error(apr_pool_t *p, const bank_db_conn_t *conn, apr_dbd_t *handle)
{
    return bank_drv_error(p, conn->driver, handle, 0);
}

/* Prepares sql on handle under label; on SQLite, where it does not prepare (a schema from
 * before the statement's), its older form (bank_stmt_older) in its place. 0, or the driver's
 * code for the statement's own form. */
static int prepare_one(const bank_db_conn_t *conn, apr_pool_t *pool, apr_dbd_t *handle,
                       const char *label, const char *sql, apr_dbd_prepared_t **st)
{
    int rv = bank_drv_prepare(conn->driver, pool, handle, sql, label, st);
    const char *older;

    if (rv != 0 && !bank_db_conn_is_pgsql(conn) && (older = bank_stmt_older(pool, label)) &&
        bank_drv_prepare(conn->driver, pool, handle, older, label, st) == 0) {
        return 0;
    }
    return rv;
}

/* Prepares every statement of conn->statements on handle under its label, into a new
 * *prepared (NULL: not kept; PostgreSQL's records name the label, so the old ones work
 * again), each in its own form or, on an older SQLite schema, its older one. NULL, or the
 * label that failed. A private iterator: a source may share the statements between
 * threads. */
static const char *prepare_statements(const bank_db_conn_t *conn, apr_pool_t *pool,
                                      apr_dbd_t *handle, apr_hash_t **prepared, int *count)
{
    apr_hash_index_t *hi;

    if (prepared) {
        *prepared = apr_hash_make(pool);
    }
    if (!conn->statements) {
        return NULL;
    }
    for (hi = apr_hash_first(pool, conn->statements); hi; hi = apr_hash_next(hi)) {
        const void *label;
        void *query;
        apr_dbd_prepared_t *st = NULL;

        apr_hash_this(hi, &label, NULL, &query);
        if (!*(const char *)query) {
            continue;
        }
        if (prepare_one(conn, pool, handle, label, query, &st) != 0) {
            return label;
        }
        if (prepared && st) {
            apr_hash_set(*prepared, label, APR_HASH_KEY_STRING, st);
        }
        if (count) {
            (*count)++;
        }
    }
    return NULL;
}

/* What each SQLite connection keeps of its own, in its own pool:
 * - read_only: SQLite opens a file that the process cannot write read-only, without an
 *   error, and keeps it so;
 * - schema: the schema version its statements were prepared against (bank_db_driver.h, D7:
 *   they fail for good once the schema changes); such a connection is replaced
 *   (sqlite_reopen). */
#define BANK_SQLITE_MARKS_KEY "mod_bank:sqlite_marks"

typedef struct {
    int read_only;
    apr_int64_t schema; /* -1: not known */
} sqlite_marks_t;

static sqlite_marks_t *marks(const bank_db_conn_t *conn)
{
    sqlite_marks_t *m = NULL;

    apr_pool_userdata_get((void **)&m, BANK_SQLITE_MARKS_KEY, conn->pool);
    if (!m) {
        m = apr_pcalloc(conn->pool, sizeof(*m));
        m->schema = -1;
        apr_pool_userdata_setn(m, BANK_SQLITE_MARKS_KEY, NULL, conn->pool);
    }
    return m;
}

/* The schema version handle sees now, or -1. */
static apr_int64_t sqlite_schema(const bank_db_conn_t *conn, apr_dbd_t *handle, apr_pool_t *pool)
{
    return bank_drv_sqlite_schema(conn->driver, pool, handle);
}

/* Prepares a SQLite handle's statements (prepare_statements) in one read transaction, after a
 * read of the schema that brings the connection's copy of it up to date (a connection that
 * has not seen the last migration yet fails that read once, SQLITE_SCHEMA, and reloads it):
 * the statements are then compiled against the schema whose cookie is read in the same
 * snapshot, and a migration that commits later expires them under a cookie that differs,
 * which replaces the connection. The sqlite3 driver compiles against the connection's copy
 * as it is, and the cookie comes from the file: read outside one snapshot, a copy not yet
 * reloaded gave statements that failed for good under a cookie that said they were current.
 * *schema: that cookie. NULL, or the label that failed, or why the schema could not be read. */
static const char *sqlite_prepare(const bank_db_conn_t *conn, apr_pool_t *pool, apr_pool_t *tmp,
                                  apr_dbd_t *handle, apr_hash_t **prepared, apr_int64_t *schema)
{
    bank_db_t *w = bank_db_wrap(tmp, conn->driver, handle, NULL);
    const char *label = NULL, *v = NULL;
    int tries, read = -1;

    if (bank_db_query(w, "BEGIN") != 0) {
        return "(BEGIN)";
    }
    for (tries = 0; tries < 3 && read != 0; tries++) {
        read = bank_db_query_value(w, "SELECT count(*) FROM sqlite_master", &v);
    }
    *schema = read == 0 ? sqlite_schema(conn, handle, tmp) : -1;
    if (*schema < 0) {
        label = "(the schema could not be read)";
    } else {
        label = prepare_statements(conn, pool, handle, prepared, NULL);
    }
    (void)bank_db_query(w, "COMMIT"); /* a read: nothing to keep or lose */
    return label;
}

/* mod_bank's settings of a PostgreSQL session: BANK_PG_SESSION_SQL, and the bound on one
 * statement (conn->timeout): statement_timeout, and a lock_timeout a little shorter, so that
 * a statement that waited for a lock says so ("canceling statement due to lock timeout"). */
static int pg_session(const bank_db_conn_t *conn, bank_db_t *db)
{
    apr_int64_t ms = apr_time_as_msec(conn->timeout);
    int rv = bank_db_query(db, BANK_PG_SESSION_SQL);

    if (rv == 0 && ms > 0) {
        rv = bank_db_query(db, apr_psprintf(db->pool,
                                            "SET statement_timeout = %" APR_INT64_T_FMT
                                            "; SET lock_timeout = %" APR_INT64_T_FMT,
                                            ms, ms > 500 ? ms - 250 : ms));
    }
    return rv;
}

/* The session settings on handle (conn's or a new one's). */
static void session_setup(const bank_db_conn_t *conn, apr_dbd_t *handle, apr_pool_t *pool,
                          bank_log_where where)
{
    bank_db_t *db = bank_db_wrap(pool, conn->driver, handle, NULL);
    const char *on = NULL, *cache = NULL;

    if (bank_db_conn_is_pgsql(conn)) {
        if (pg_session(conn, db) != 0) {
            bank_log(where, BANK_LOG_MARK, BANK_LOG_ERR,
                     BANKLOGNO(0801) "cannot set up the database session: %s",
                     last_error(pool, conn, handle));
        }
        return;
    }
    /* First: a locked database is waited for while the session is set up and the statements
     * prepared (DBDInitSQL, which may run after this, may set the requests' own timeout). */
    (void)bank_db_query(db, BANK_SQLITE_BUSY_SQL); /* it returns a row: not an error */
    if (bank_db_query(db, BANK_SQLITE_SESSION_SQL) == 0) {
        bank_db_query_value(db, "PRAGMA foreign_keys", &on);
    }
    /* A bounded page cache (BANK_SQLITE_CACHE_KIB); SQLite reads a negative size as KiB. */
    if (bank_db_query(db, apr_psprintf(pool, "PRAGMA cache_size = -%d", BANK_SQLITE_CACHE_KIB)) ==
        0) {
        bank_db_query_value(db, "PRAGMA cache_size", &cache);
    }
    if (!on || strcmp(on, "1") != 0) {
        bank_log(where, BANK_LOG_MARK, BANK_LOG_ERR,
                 BANKLOGNO(0812) "SQLite connection: cannot turn foreign keys on: %s",
                 last_error(pool, conn, handle));
    } else {
        bank_log(where, BANK_LOG_MARK, BANK_LOG_DEBUG,
                 BANKLOGNO(0813) "SQLite connection: foreign_keys=%s cache_size=%s", on,
                 cache ? cache : "(unknown)");
    }
}

void bank_db_conn_setup(bank_db_conn_t *conn, apr_pool_t *ptemp, bank_log_where where,
                        int reprepare)
{
    const char *label;

    /* A file the process cannot write now is opened read-only, for good. */
    if (!bank_db_conn_is_pgsql(conn) && access(conn->params, W_OK) != 0) {
        marks(conn)->read_only = 1;
    }
    session_setup(conn, conn->handle, ptemp, where);
    if (bank_db_conn_is_pgsql(conn)) {
        return;
    }
    if (!reprepare) {
        marks(conn)->schema = sqlite_schema(conn, conn->handle, ptemp);
    } else if ((label = sqlite_prepare(conn, conn->pool, ptemp, conn->handle, &conn->prepared,
                                       &marks(conn)->schema)) != NULL) {
        bank_log(where, BANK_LOG_MARK, BANK_LOG_ERR,
                 BANKLOGNO(0814) "cannot prepare %s again on a new SQLite connection: %s", label,
                 last_error(ptemp, conn, conn->handle));
    }
}

/* ---- a SQLite connection opened read-only ----
 * It stays read-only after the file is writable again and the pool's check cannot tell: so
 * it is replaced (same params, set-up SQL and statements) once a write succeeds on a new
 * one. 0 if replaced; -1 (the old one kept) if not. Never inside a transaction. */
static int sqlite_reopen(bank_db_t *db, const char *why)
{
    bank_db_conn_t *conn = db->conn;
    apr_dbd_t *handle = NULL, *old = conn->handle;
    apr_hash_t *prepared;
    const char *err = NULL, *label;
    apr_int64_t schema;
    int i;

    if (bank_db_in_txn(db)) {
        bank_log(db->where, BANK_LOG_MARK, BANK_LOG_DEBUG,
                 BANKLOGNO(0811) "SQLite connection not replaced: inside a transaction");
        return -1;
    }
    if (bank_drv_open(conn->driver, conn->pool, conn->params, &handle, &err) != APR_SUCCESS) {
        bank_log(db->where, BANK_LOG_MARK, BANK_LOG_DEBUG,
                 BANKLOGNO(0809) "cannot open a new SQLite connection: %s",
                 err ? err : "no reason given");
        return -1;
    }
    for (i = 0; conn->init_sql && i < conn->init_sql->nelts; i++) {
        bank_drv_query(conn->driver, handle, APR_ARRAY_IDX(conn->init_sql, i, const char *), NULL);
    }
    session_setup(conn, handle, db->pool, db->where);
    if (!bank_db_writable_handle(db, handle)) {
        bank_log(db->where, BANK_LOG_MARK, BANK_LOG_DEBUG,
                 BANKLOGNO(0810) "a new SQLite connection cannot write either: %s",
                 last_error(db->pool, conn, handle));
        bank_drv_close(conn->driver, handle);
        return -1;
    }
    if ((label = sqlite_prepare(conn, conn->pool, db->pool, handle, &prepared, &schema)) != NULL) {
        bank_log(db->where, BANK_LOG_MARK, BANK_LOG_ERR,
                 BANKLOGNO(0807) "cannot prepare %s on a new SQLite connection: %s", label,
                 last_error(db->pool, conn, handle));
        bank_drv_close(conn->driver, handle);
        return -1;
    }
    marks(conn)->schema = schema;
    conn->handle = handle;
    conn->prepared = prepared;
    if (db->src->ops->replaced) {
        db->src->ops->replaced(db->src, conn);
    }
    bank_db_replace(db, handle, prepared);
    bank_drv_close(conn->driver, old);
    marks(conn)->read_only = 0;
    bank_log(db->where, BANK_LOG_MARK, BANK_LOG_WARNING,
             BANKLOGNO(0808) "SQLite connection %s replaced by a new one", why);
    return 0;
}

/* ---- a PostgreSQL session lost or re-opened ----
 * The pgsql driver re-opens a closed connection as a session without the prepared statements
 * or the set-up SQL (bank_db_driver.h, D5). After a failed statement such a session is
 * rebuilt as it was first built. */

/* Prepared statements in the session: -1 if it cannot be asked (connection lost). */
static int pg_statement_count(bank_db_t *db)
{
    const char *v = NULL;

    if (bank_db_query_value(db, BANK_DRV_PG_COUNT_SQL, &v) != 0) {
        return -1;
    }
    return bank_drv_pg_count(v);
}

/* Set-up SQL, mod_bank's session settings, then every statement under its label. */
static int pg_restore(bank_db_t *db)
{
    bank_db_conn_t *conn = db->conn;
    const char *label;
    int i, count = 0;

    for (i = 0; conn->init_sql && i < conn->init_sql->nelts; i++) {
        if (bank_db_query(db, APR_ARRAY_IDX(conn->init_sql, i, const char *)) != 0) {
            bank_log(db->where, BANK_LOG_MARK, BANK_LOG_WARNING,
                     BANKLOGNO(0803) "DBDInitSQL failed on the re-opened connection: %s",
                     bank_db_error(db));
        }
    }
    if (pg_session(conn, db) != 0) {
        bank_log(db->where, BANK_LOG_MARK, BANK_LOG_WARNING,
                 BANKLOGNO(0804) "cannot set up the re-opened database session: %s",
                 bank_db_error(db));
    }
    if ((label = prepare_statements(conn, db->pool, conn->handle, NULL, &count)) != NULL) {
        bank_log(db->where, BANK_LOG_MARK, BANK_LOG_ERR,
                 BANKLOGNO(0805) "cannot prepare %s again on the re-opened database "
                                 "connection: %s",
                 label, last_error(db->pool, conn, conn->handle));
        return -1;
    }
    bank_log(db->where, BANK_LOG_MARK, BANK_LOG_WARNING,
             BANKLOGNO(0806) "database connection was re-opened (server restarted or "
                             "connection lost): session restored, %d statements prepared",
             count);
    return 0;
}

/* The handle's recovery hook (bank_db_recover). */
static bank_conn_state conn_recover(bank_db_t *db)
{
    bank_db_conn_t *conn = db->conn;
    bank_conn_state st = BANK_CONN_FRESH;
    int n;

    if (!bank_db_is_pgsql(db)) {
        /* A refused write: a new connection if the database can be written now (FRESH, so
         * the statement, which wrote nothing, runs again), else DOWN. */
        if (bank_db_read_only(db)) {
            marks(conn)->read_only = 1;
            return sqlite_reopen(db, "opened while the database was read-only") == 0
                       ? BANK_CONN_FRESH
                       : BANK_CONN_DOWN;
        }
        /* The schema changed under its statements: a new connection prepares them again
         * (FRESH: the statement failed without running). */
        if (!bank_db_in_txn(db) && marks(conn)->schema >= 0 &&
            sqlite_schema(conn, conn->handle, db->pool) != marks(conn)->schema) {
            return sqlite_reopen(db, "prepared before the schema changed (a migration)") == 0
                       ? BANK_CONN_FRESH
                       : BANK_CONN_DOWN;
        }
        /* SQLite has no session to lose; a handle that fails the check is unusable. */
        return bank_drv_check(conn->driver, db->pool, conn->handle) == APR_SUCCESS
                   ? BANK_CONN_INTACT
                   : BANK_CONN_DOWN;
    }
    /* none prepared is a re-opened session only where some are expected */
    if ((n = pg_statement_count(db)) > 0 || (n == 0 && !bank_db_expects(db))) {
        return BANK_CONN_INTACT;
    }
    if (n < 0) {
        /* Lost: PQreset re-opens it, if the server is back. */
        if (bank_drv_check(conn->driver, db->pool, conn->handle) != APR_SUCCESS ||
            (n = pg_statement_count(db)) < 0) {
            return BANK_CONN_DOWN;
        }
        if (n > 0 || !bank_db_expects(db)) {
            return n > 0 ? BANK_CONN_INTACT : BANK_CONN_RESTORED;
        }
        st = BANK_CONN_RESTORED;
    }
    return pg_restore(db) != 0 ? BANK_CONN_DOWN : st;
}

/* ---- lending ---- */

bank_db_t *bank_db_acquire(bank_db_source_t *src, apr_pool_t *p, bank_log_where where,
                           const char **err)
{
    bank_db_conn_t *conn = src->ops->acquire(src, p, err);
    bank_db_t *db;

    if (!conn) {
        return NULL;
    }
    db = bank_db_wrap(p, conn->driver, conn->handle, conn->prepared);
    db->conn = conn;
    db->src = src;
    db->recover = conn_recover;
    db->where = where;
    db->bound.timeout = conn->timeout;
    db->bound.guard = src->guard;
    if (!bank_db_conn_is_pgsql(conn)) {
        db->writer_lock = src->writer_lock;
        /* marked read-only, and the file looks writable again: replace it before use */
        if (marks(conn)->read_only && access(conn->params, W_OK) == 0) {
            sqlite_reopen(db, "opened while the database was read-only");
        }
    }
    return db;
}

void bank_db_give(bank_db_t *db)
{
    if (db->conn && db->src->ops->release) {
        if (db->in_txn) {
            bank_db_end(db, 0);
        }
        db->src->ops->release(db->src, db->conn);
        db->conn = NULL;
    }
}

/* ---- a source of one's own: apr_dbd_open ---- */

typedef struct {
    const apr_dbd_driver_t *driver;
    const char *params;
} own_source_t;

static apr_status_t close_conn(void *data)
{
    bank_db_conn_t *conn = data;

    bank_drv_close(conn->driver, conn->handle);
    return APR_SUCCESS;
}

static bank_db_conn_t *own_acquire(bank_db_source_t *src, apr_pool_t *p, const char **err)
{
    own_source_t *own = src->data;
    apr_pool_t *cp;
    bank_db_conn_t *conn;
    const char *why = NULL;

    apr_pool_create(&cp, p);
    conn = apr_pcalloc(cp, sizeof(*conn));
    conn->driver = own->driver;
    conn->pool = cp;
    conn->params = own->params;
    conn->prepared = apr_hash_make(cp);
    if (bank_drv_open(own->driver, cp, own->params, &conn->handle, &why) != APR_SUCCESS) {
        *err =
            apr_pstrcat(p, "cannot open the database: ", bank_db_error_line(p, why), (char *)NULL);
        apr_pool_destroy(cp);
        return NULL;
    }
    apr_pool_cleanup_register(cp, conn, close_conn, apr_pool_cleanup_null);
    bank_db_conn_setup(conn, cp, NULL, 0);
    return conn;
}

static void own_release(bank_db_source_t *src, bank_db_conn_t *conn)
{
    (void)src;
    apr_pool_destroy(conn->pool);
}

static const bank_db_source_ops own_ops = {own_acquire, own_release, NULL};

bank_db_source_t *bank_db_source_open(apr_pool_t *p, const char *driver_name, const char *params,
                                      const char **err)
{
    const apr_dbd_driver_t *driver = NULL;
    bank_db_source_t *src;
    own_source_t *own;

    if ((*err = bank_drv_load(p, driver_name, &driver)) != NULL) {
        return NULL;
    }
    own = apr_pcalloc(p, sizeof(*own));
    own->driver = driver;
    own->params = apr_pstrdup(p, params);
    src = apr_pcalloc(p, sizeof(*src));
    src->ops = &own_ops;
    src->data = own;
    return src;
}

bank_db_t *bank_db_open(apr_pool_t *p, const char *driver_name, const char *params,
                        const char **err)
{
    bank_db_source_t *src = bank_db_source_open(p, driver_name, params, err);

    return src ? bank_db_acquire(src, p, NULL, err) : NULL;
}

const char *bank_db_prepare_all(bank_db_t *db)
{
    const bank_stmt_t *st;
    int i, pgsql = bank_db_is_pgsql(db);
    /* the cookie before the statements: a migration meanwhile is a change */
    apr_int64_t cookie = pgsql ? -1 : sqlite_schema(db->conn, db->handle, db->pool);

    for (i = 0; (st = bank_stmt_at(i)) != NULL; i++) {
        const char *sql = bank_stmt_expand(db->conn->pool, st->sql, pgsql), *older;
        const char *err = bank_db_prepare(db, st->label, sql, 1);

        if (err && !pgsql && (older = bank_stmt_older(db->conn->pool, st->label)) &&
            !bank_db_prepare(db, st->label, older, 1)) {
            /* a re-opened connection tries the statement's own form first again */
            apr_hash_set(db->conn->statements, st->label, APR_HASH_KEY_STRING, sql);
            err = NULL;
        }
        if (err) {
            return apr_psprintf(db->pool, "statement %s: %s", st->label, err);
        }
    }
    if (!pgsql) {
        marks(db->conn)->schema = cookie;
    }
    return NULL;
}
