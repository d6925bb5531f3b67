/* Inside the data layer only (bank_db.c, bank_db_txn.c, bank_db_conn.c): the handle's fields
 * and the helpers these files share. */
#ifndef BANK_DB_INTERNAL_H
#define BANK_DB_INTERNAL_H

#include "bank_db.h"
#include "bank_db_source.h"

struct bank_db_s {
    const apr_dbd_driver_t *driver;
    apr_dbd_t *handle;
    apr_hash_t *prepared;       /* label -> apr_dbd_prepared_t * */
    apr_pool_t *pool;           /* results and error texts */
    apr_dbd_transaction_t *txn; /* the sqlite3 driver's; PostgreSQL's are plain statements */
    int in_txn;                 /* between bank_db_begin and bank_db_end */
    int txn_failed;  /* a statement failed inside the transaction: it can only roll back */
    int txn_cleanup; /* the pool cleanup that rolls back a forgotten txn is registered */
    const char *error;
    bank_db_conn_t *conn;  /* what the source lent (NULL: a bare handle of the data layer) */
    bank_db_source_t *src; /* where it came from */
    bank_log_where where;  /* where the host logs what happens on it */
    int conn_lost;
    /* SQLite refused a write (SQLITE_READONLY: the file, its directory or the file system is
     * read-only to httpd's User); recovery then tries a new connection (bank_db_conn.c). */
    int read_only;
    /* SQLite in a threaded server: the process's writer lock, else NULL; holding: this
     * connection holds it. */
    apr_thread_mutex_t *writer_lock;
    int holding;
    int statements; /* prepared statements run (bank_db_statements) */
    /* PostgreSQL's bounded waits (bank_db_wait.c): the connection's timeout, the guard that cuts
     * a statement past it, and why the last call failed when the reason is ours, not the
     * driver's (the guard cut it; a commit came back past the bound). */
    apr_interval_time_t timeout;
    bank_db_guard_t *guard;
    const char *cause;
};

/* A handle on driver and handle (prepared: label -> statement, NULL for none yet), used
 * through p; no source, so no recovery (the session set-up of bank_db_conn.c). */
bank_db_t *bank_db_wrap(apr_pool_t *p, const apr_dbd_driver_t *driver, apr_dbd_t *handle,
                        apr_hash_t *prepared);
/* Puts a new connection and its statements in place of the handle's (not read-only). */
void bank_db_replace(bank_db_t *db, apr_dbd_t *handle, apr_hash_t *prepared);
/* Whether a write succeeds on a SQLite handle (bank_db_writable on another handle). */
int bank_db_writable_handle(bank_db_t *db, apr_dbd_t *handle);
/* What a failed statement says about db's connection, after repairing it (bank_db_conn.c). */
bank_conn_state bank_db_conn_recover(bank_db_t *db);
/* 1 if statements are prepared on the connection (a PostgreSQL session without any was
 * re-opened under us). */
int bank_db_conn_expects(const bank_db_conn_t *conn);

/* What a driver call returns when it succeeded but mod_bank counts it failed (db->cause):
 * a commit that came back only after the bound. */
#define BANK_DB_RV_UNCONFIRMED (-9001)

/* The bound on one PostgreSQL statement (bank_db_wait.c): watch_begin before the driver call,
 * watch_end after it with its return value (commits: the call may commit a write) gives the
 * value to go on with. */
typedef struct {
    int ticket;
    apr_time_t start;
} bank_db_watch_t;
void bank_db_watch_begin(bank_db_t *db, bank_db_watch_t *w);
int bank_db_watch_end(bank_db_t *db, bank_db_watch_t *w, int rv, int commits);
/* A PostgreSQL connection's socket, or -1 (no libpq loaded, no handle). */
int bank_db_pg_socket(bank_db_t *db);

/* A failed driver call's text kept and its kind: BANK_DB_BUSY or BANK_DB_ERROR. Inside a
 * transaction it can then only roll back. */
bank_db_rc bank_db_classify(bank_db_t *db, int rv);
/* After a failed statement: 1 if running it once more is both useful and safe (bank_db.c). */
int bank_db_retry(bank_db_t *db, bank_db_rc rc, int read_only);
/* SQLite's per-process writer lock: 1 if this call took it (then release it). */
int bank_db_hold(bank_db_t *db);
void bank_db_release(bank_db_t *db);

#endif
