/* The data layer's handle: one opaque connection that the module (lent by mod_dbd's pool),
 * bankctl and the C tests (a connection of their own) share, with transactions, session
 * set-up, recovery and retry in one place (bank_db_source.h says where connections come
 * from). Callers use the typed functions of bank_store.h; only the store files
 * (mod_bank/bank_store_*.c) run statements by label. No httpd dependency.
 *
 * A failed call returns what went wrong and keeps the driver's text (first line only) for
 * the log (bank_db_error); it never decides an HTTP answer. */
#ifndef BANK_DB_H
#define BANK_DB_H

#include <apr_pools.h>
#include <apr_hash.h>

typedef struct bank_db_s bank_db_t;

/* What went wrong, as far as a caller must tell apart. */
typedef enum {
    BANK_DB_OK = 0,
    BANK_DB_ERROR,     /* statement failed (SQL error, constraint, lost connection) */
    BANK_DB_BUSY,      /* database locked or busy past its timeout */
    BANK_DB_NO_STMT,   /* label was not prepared on this connection */
    BANK_DB_NOT_FOUND, /* a typed lookup found no row (nothing failed) */
    BANK_DB_ROLLBACK   /* from a bank_db_transaction callback: undo, not an error */
} bank_db_rc;

/* What a failed statement says about the connection it ran on (bank_db_recover). */
typedef enum {
    BANK_CONN_INTACT = 0, /* alive, session unchanged: the statement itself failed */
    BANK_CONN_FRESH,      /* alive, but libpq had re-opened it: the statement was not
                             prepared there and did not run; the session is repaired */
    BANK_CONN_RESTORED,   /* it was lost during the statement and is re-opened and repaired;
                             a write may or may not have committed before the loss */
    BANK_CONN_DOWN        /* the database cannot be reached */
} bank_conn_state;

/* ---- handles ---- */

/* Opens a connection of its own (bankctl, the C tests): driver_name "sqlite3" or "pgsql",
 * params as apr_dbd_open takes them; the session set up as the module's (bank_db_source.h).
 * Closed when p goes. NULL and the error text in *err on failure. No statement is prepared. */
bank_db_t *bank_db_open(apr_pool_t *p, const char *driver_name, const char *params,
                        const char **err);
/* Prepares every statement of the store under its label. NULL, or the error text naming the
 * statement that did not prepare (a schema missing or out of step). */
const char *bank_db_prepare_all(bank_db_t *db);

/* After a failed statement: finds out whether the connection was lost or re-opened under
 * it and, if so, restores its session (set-up SQL, prepared statements); a SQLite connection
 * that was opened read-only is replaced when the file can be written now. Outside a
 * transaction a statement is then run once more when that is safe: always for FRESH, and
 * for RESTORED only a SELECT or BEGIN (a write may have committed). */
bank_conn_state bank_db_recover(bank_db_t *db);

/* After a failed call: 1 if trying again later may work (the database busy or unreachable,
 * the connection lost), 0 for a failure that would repeat (an error of ours, a statement
 * refused). */
int bank_db_transient(bank_db_t *db, bank_db_rc rc);

apr_pool_t *bank_db_pool(const bank_db_t *db);
/* Makes p the pool of the handle's results and error texts from now on and returns the one
 * before: a long run (bankctl bvn import) gives each batch a pool it clears afterwards, so
 * that its memory stays one batch's. Outside a transaction only (inside one: NULL, and
 * nothing changes); the last error text is forgotten (it may live in the pool given back). */
apr_pool_t *bank_db_use_pool(bank_db_t *db, apr_pool_t *p);
/* Where the host logs what happens on this handle (bank_log.h; NULL: a default place). */
const void *bank_db_where(const bank_db_t *db);
/* 1 on PostgreSQL, whose transactions, sessions and types mod_bank treats apart. */
int bank_db_is_pgsql(const bank_db_t *db);
/* The last failure's text, for the log only. */
const char *bank_db_error(const bank_db_t *db);
/* 1 once recovery found the connection lost or down. */
int bank_db_conn_lost(const bank_db_t *db);
/* 1 between bank_db_begin and bank_db_end. */
int bank_db_in_txn(const bank_db_t *db);

/* SQLite opens a file it cannot write read-only, without an error, and keeps it so: 1 once a
 * write was refused as read-only on this handle. */
int bank_db_read_only(const bank_db_t *db);
/* Prepared statements run on this handle so far (a retry after a re-opened connection
 * counts again): what a request costs in round trips, for tests and the trace log. */
int bank_db_statements(const bank_db_t *db);
/* Whether a write succeeds on this SQLite connection (one that is rolled back: BEGIN
 * IMMEDIATE alone succeeds on a read-only connection; writing the header's user_version
 * does not), under the process's writer lock. */
int bank_db_writable(bank_db_t *db);

/* A driver's error text fit for a log or a terminal: its first line only, since
 * PostgreSQL's DETAIL line quotes key values (a BVN, an e-mail); a fixed text for NULL. */
const char *bank_db_error_line(apr_pool_t *p, const char *msg);

/* ---- transactions ---- */

/* One transaction at a time per connection. commit=0 rolls back. After a failed statement
 * inside it the transaction can only roll back: bank_db_end(db, 1) then rolls back and
 * returns BANK_DB_ERROR. A transaction left open when the pool goes is rolled back. */
bank_db_rc bank_db_begin(bank_db_t *db);
bank_db_rc bank_db_end(bank_db_t *db, int commit);
/* A failure of ours (not the driver's), said in the error text: inside a transaction it
 * can then only roll back. Returns BANK_DB_ERROR. */
bank_db_rc bank_db_fail(bank_db_t *db, const char *why);
/* BEGIN, fn, then COMMIT if fn returned BANK_DB_OK, else ROLLBACK. Returns fn's failure
 * (its error text kept, not the rollback's), the commit's, or BANK_DB_OK (also after
 * BANK_DB_ROLLBACK, an undo that is no error). */
typedef bank_db_rc (*bank_db_txn_fn)(bank_db_t *db, void *baton);
bank_db_rc bank_db_transaction(bank_db_t *db, bank_db_txn_fn fn, void *baton);

/* ---- bookkeeping SQL ---- */

/* Runs SQL text of our own that is not a store statement (session, locking, migration
 * bookkeeping; never built from input). bank_db_query: no rows; bank_db_query_value: the
 * first column of the first row (every row read), or NULL. 0, or the driver's code (the text
 * in bank_db_error). */
int bank_db_query(bank_db_t *db, const char *sql);
int bank_db_query_value(bank_db_t *db, const char *sql, const char **value);
/* The newest migration recorded in schema_version (bankctl migrate); 0 for none or no such
 * table (a new database). */
int bank_db_schema_version(bank_db_t *db);
/* Prepares sql under label on this connection. named: PREPAREd on a PostgreSQL server under
 * the label (the store's statements); unnamed for bookkeeping of one's own. NULL or the
 * error text. */
const char *bank_db_prepare(bank_db_t *db, const char *label, const char *sql, int named);

/* The session settings mod_bank needs on a PostgreSQL connection, whatever the server's or
 * role's defaults: ISO dates (bank_time_parse reads them in any TimeZone) and UTF-8. */
#define BANK_PG_SESSION_SQL "SET DateStyle = 'ISO'; SET client_encoding = 'UTF8'"
/* How long a new SQLite connection waits for a locked database while mod_bank sets up its
 * session and prepares its statements (SQLite's own default: fail at once). */
#define BANK_SQLITE_BUSY_SQL "PRAGMA busy_timeout = 5000"
/* SQLite enforces foreign keys only when each connection asks for it. */
#define BANK_SQLITE_SESSION_SQL "PRAGMA foreign_keys = ON"
/* Each SQLite connection's page cache, in KiB (SQLite's default is 2,000 KiB). mod_dbd keeps
 * up to DBDMax connections per process and each cache grows to its size as the database
 * grows; SQLite runs one statement at a time per process (apr_dbd's driver lock) and, in WAL
 * mode, a connection drops its cache whenever another one wrote: a bigger cache buys little
 * and costs DBDMax times its size in every process (docs/deployment.md). */
#define BANK_SQLITE_CACHE_KIB 64

#endif
