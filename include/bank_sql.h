/* Every SQL statement of mod_bank, and the query helpers over apr_dbd that the module and
 * bankctl share. No httpd dependency: bankctl opens its own apr_dbd connection and prepares
 * the same statements the module prepares through mod_dbd.
 *
 * SQL text is written once for both drivers: parameters are typed apr_dbd placeholders
 * (%s text, %lld bigint, %d int, %pDz timestamptz, %pDd date) so PostgreSQL prepares them
 * with the right types while SQLite binds them as text. A literal percent is written %%. */
#ifndef BANK_SQL_H
#define BANK_SQL_H

#include <apr_pools.h>
#include <apr_hash.h>
#include <apr_dbd.h>
#include <apr_thread_mutex.h>

typedef struct {
    const char *label;
    const char *sql; /* both drivers, unless pg is set */
    const char *pg;  /* PostgreSQL text where its types need casts (uuid, timestamptz) */
} bank_stmt_t;

/* All statements, terminated by {NULL, NULL, NULL}. */
extern const bank_stmt_t bank_statements[];

/* The text of a statement for a driver name as apr_dbd_name() gives it. */
const char *bank_stmt_sql(const bank_stmt_t *st, const char *driver_name);

/* 1 if driver is apr_dbd's PostgreSQL driver, whose transactions, sessions and types
 * mod_bank treats apart. */
int bank_db_is_pgsql(const apr_dbd_driver_t *driver);

/* A driver's error text fit for a log or a terminal: its first line only, since
 * PostgreSQL's DETAIL line quotes key values (a BVN, an e-mail); a fixed text for NULL. */
const char *bank_db_error_line(apr_pool_t *p, const char *msg);

/* What a failed statement says about the connection it ran on (see bank_db_t.recover). */
typedef enum {
    BANK_CONN_INTACT = 0, /* alive, session unchanged: the statement itself failed */
    BANK_CONN_FRESH,      /* alive, but libpq had re-opened it: the statement was not
                             prepared there and did not run; the session is repaired */
    BANK_CONN_RESTORED,   /* it was lost during the statement and is re-opened and repaired;
                             a write may or may not have committed before the loss */
    BANK_CONN_DOWN        /* the database cannot be reached */
} bank_conn_state;

/* A connection as the query helpers see it: from mod_dbd (ap_dbd_t) or from bankctl. */
typedef struct bank_db_s bank_db_t;
struct bank_db_s {
    const apr_dbd_driver_t *driver;
    apr_dbd_t *handle;
    apr_hash_t *prepared;       /* label -> apr_dbd_prepared_t * */
    apr_pool_t *pool;           /* results and error texts */
    apr_dbd_transaction_t *txn; /* the sqlite3 driver's; PostgreSQL's are plain statements */
    int in_txn;                 /* between bank_db_begin and bank_db_end */
    int txn_failed;    /* a statement failed inside the transaction: it can only roll back */
    int txn_cleanup;   /* the pool cleanup that rolls back a forgotten txn is registered */
    const char *error; /* last driver error text, for the log only */
    /* SQLite refused a write (SQLITE_READONLY: the file, its directory or the file system
     * is read-only to httpd's User). The answer is 503, and recover tries a new connection:
     * SQLite opens a file it cannot write read-only and keeps it so (db.c). */
    int read_only;
    /* Set by the module (NULL in bankctl): after a failed statement, finds out whether the
     * connection was lost or re-opened under it and, if so, restores its session (init SQL,
     * prepared statements) so the pooled connection is whole again. Outside a transaction
     * the helpers then run the statement once more when that is safe: always for FRESH, and
     * for RESTORED only if it is a SELECT or BEGIN (a write may have committed). */
    bank_conn_state (*recover)(bank_db_t *db);
    int conn_lost; /* recover found the connection lost or down during this request */
    /* SQLite in a threaded server: the process's writer lock (see sql.c), else NULL;
     * holding: this connection holds it. */
    apr_thread_mutex_t *writer_lock;
    int holding;
};

/* What went wrong, as far as a handler must tell apart. */
typedef enum {
    BANK_DB_OK = 0,
    BANK_DB_ERROR,  /* statement failed (SQL error, constraint, lost connection) */
    BANK_DB_BUSY,   /* database locked or busy past its timeout */
    BANK_DB_NO_STMT /* label was not prepared on this connection */
} bank_db_rc;

/* Rows of a result, fully read (never a half-read result left on a pooled connection).
 * rows[i][j] is NULL for SQL NULL, on both drivers. */
typedef struct {
    int nrows;
    int ncols;
    const char ***rows;
} bank_rows_t;

/* Runs a prepared SELECT with nargs string arguments (NULL argument = SQL NULL). */
bank_db_rc bank_db_select(bank_db_t *db, const char *label, bank_rows_t *out, int nargs,
                          const char *const *args);
/* Runs a prepared INSERT/UPDATE/DELETE; *affected gets the row count if not NULL. */
bank_db_rc bank_db_exec(bank_db_t *db, const char *label, int *affected, int nargs,
                        const char *const *args);
/* One transaction at a time per connection. commit=0 rolls back. An error inside the
 * transaction makes bank_db_end roll back and return BANK_DB_ERROR. */
bank_db_rc bank_db_begin(bank_db_t *db);
bank_db_rc bank_db_end(bank_db_t *db, int commit);

/* Runs SQL text that is not a prepared statement (session, locking and bookkeeping SQL of
 * our own, never built from input) and reads every row, as bank_db_select does. Returns
 * apr_dbd's status: 0, or a code for apr_dbd_error. */
int bank_db_select_sql(bank_db_t *db, const char *sql, bank_rows_t *out);

/* Convenience: first row's column, or NULL. */
const char *bank_rows_get(const bank_rows_t *r, int row, int col);

/* A boolean column as either driver prints it: 1 for "1"/"t"/"true" (SQLite's integer 1,
 * PostgreSQL's boolean), 0 otherwise (NULL included). */
int bank_db_bool(const char *v);

/* The session settings mod_bank needs on a PostgreSQL connection, whatever the server's or
 * role's defaults: ISO dates (bank_time_parse reads them in any TimeZone) and UTF-8. */
#define BANK_PG_SESSION_SQL "SET DateStyle = 'ISO'; SET client_encoding = 'UTF8'"
/* SQLite enforces foreign keys only when each connection asks for it. */
#define BANK_SQLITE_SESSION_SQL "PRAGMA foreign_keys = ON"

#define BANK_NARGS(a) ((int)(sizeof(a) / sizeof((a)[0])))

#endif
