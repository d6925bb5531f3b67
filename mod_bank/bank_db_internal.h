/* Inside the data layer only: the handle's fields, and what bank_db.c gives the layers above it
 * (bank_db_txn.c, then bank_db_conn.c). The layers, from the bottom: bank_db_driver.c (apr_dbd
 * and its quirks), bank_db_wait.c (bounded waits), bank_db.c (the handle, statements, rows),
 * bank_db_txn.c (transactions), bank_db_conn.c (connections, their session and recovery).
 * Each calls only those below it; recovery reaches down as a hook (bank_db_recover_fn). */
#ifndef BANK_DB_INTERNAL_H
#define BANK_DB_INTERNAL_H

#include "bank_db.h"
#include "bank_db_driver.h"
#include "bank_db_source.h"
#include "bank_db_wait.h"

/* Runs of one statement, or of one SQLite transaction, while each failure is on a connection
 * the recovery has just replaced (FRESH): bankctl migrate commits its files one after the
 * other, and each change of the schema fails the statements prepared before it once. */
#define BANK_DB_FRESH_TRIES 3

/* How the connection layer repairs a handle's connection after a failed statement
 * (bank_db_conn.c); the handle layer calls it through bank_db_recover. */
typedef bank_conn_state (*bank_db_recover_fn)(bank_db_t *db);

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
    bank_db_conn_t *conn;       /* what the source lent (NULL: a bare handle of the data layer) */
    bank_db_source_t *src;      /* where it came from */
    bank_db_recover_fn recover; /* set with conn (bank_db_conn.c) */
    bank_log_where where;       /* where the host logs what happens on it */
    int conn_lost;
    /* SQLite refused a write (SQLITE_READONLY: the file, its directory or the file system is
     * read-only to httpd's User); recovery then tries a new connection (bank_db_conn.c). */
    int read_only;
    /* SQLite in a threaded server: the process's writer lock, else NULL; holding: this
     * connection holds it. */
    apr_thread_mutex_t *writer_lock;
    int holding;
    int statements; /* prepared statements run (bank_db_statements) */
    /* PostgreSQL's bounded waits (bank_db_wait.h): the connection's timeout and guard, and
     * why the last call failed when the reason is ours. */
    bank_db_bound_t bound;
};

/* A handle on driver and handle (prepared: label -> statement, NULL for none yet), used
 * through p; no source, so no recovery (the session set-up of bank_db_conn.c). */
bank_db_t *bank_db_wrap(apr_pool_t *p, const apr_dbd_driver_t *driver, apr_dbd_t *handle,
                        apr_hash_t *prepared);
/* Puts a new connection and its statements in place of the handle's (not read-only). */
void bank_db_replace(bank_db_t *db, apr_dbd_t *handle, apr_hash_t *prepared);
/* Whether a write succeeds on a SQLite handle (bank_db_writable on another handle). */
int bank_db_writable_handle(bank_db_t *db, apr_dbd_t *handle);
/* 1 if statements are expected on the handle's connection (a PostgreSQL session without any
 * was re-opened under us, D5). */
int bank_db_expects(const bank_db_t *db);

/* A driver call on db's connection under the bound (bank_db_wait.h); a connection the guard
 * cut counts as lost. */
void bank_db_watch_begin(bank_db_t *db, bank_db_watch_t *w);
int bank_db_watch_end(bank_db_t *db, bank_db_watch_t *w, int rv, int commits);

/* A failed driver call's text kept and its kind: BANK_DB_BUSY or BANK_DB_ERROR. Inside a
 * transaction it can then only roll back. bank_db_classify_text: the text read before (NULL:
 * the driver's now). */
bank_db_rc bank_db_classify(bank_db_t *db, int rv);
bank_db_rc bank_db_classify_text(bank_db_t *db, int rv, const char *text);
/* After a failed statement: 1 if running it once more is both useful and safe (bank_db.c). */
int bank_db_retry(bank_db_t *db, bank_db_rc rc, int read_only);
/* SQLite's per-process writer lock (D8): 1 if this call took it (then release it). */
int bank_db_hold(bank_db_t *db);
void bank_db_release(bank_db_t *db);

#endif
