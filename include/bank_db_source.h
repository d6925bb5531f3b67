/* Where the data layer's connections come from: a source lends a connection over apr_dbd
 * and takes it back; the data layer (bank_db_conn.c) sets up its session, prepares its
 * statements, and recovers it when it was lost or re-opened. Two sources: mod_dbd's pool
 * (mod_bank_db.c, the module) and a connection of one's own opened with apr_dbd_open
 * (bank_db_open: bankctl, the C tests). Only the data layer and a source include this
 * header; everyone else holds a bank_db_t (bank_db.h). */
#ifndef BANK_DB_SOURCE_H
#define BANK_DB_SOURCE_H

#include <apr_dbd.h>
#include <apr_tables.h>
#include <apr_thread_mutex.h>
#include "bank_db.h"
#include "bank_log.h"
#include "bank_db_guard.h"

/* One connection as a source lends it. The data layer may put a new connection in handle
 * and prepared (a re-opened one) and then tells the source through its replaced(). */
typedef struct {
    const apr_dbd_driver_t *driver;
    apr_dbd_t *handle;
    apr_hash_t *prepared; /* label -> apr_dbd_prepared_t * */
    apr_pool_t *pool;     /* lives as long as the connection */
    /* How it was opened, to open it again: apr_dbd_open's params, the operator's set-up SQL
     * run first on every new session (DBDInitSQL; may be NULL), and every statement prepared
     * on it, label -> SQL (other modules' too; NULL until some are). */
    const char *params;
    const apr_array_header_t *init_sql;
    apr_hash_t *statements;
    /* How long one statement may wait for a PostgreSQL server (BankDatabaseTimeout): the
     * session's statement_timeout and lock_timeout, and the statement guard's deadline.
     * 0: no bound (bankctl: a migration may take long). */
    apr_interval_time_t timeout;
    void *source_data; /* the source's own */
} bank_db_conn_t;

typedef struct bank_db_source_s bank_db_source_t;

typedef struct {
    /* A connection for use until release (or until p goes), else NULL after setting *err. */
    bank_db_conn_t *(*acquire)(bank_db_source_t *src, apr_pool_t *p, const char **err);
    /* Takes it back (NULL: it goes back with the pool it was acquired for). */
    void (*release)(bank_db_source_t *src, bank_db_conn_t *conn);
    /* The data layer put a new connection in conn (the old handle, closed next, in old):
     * the source keeps the new one from now on. */
    void (*replaced)(bank_db_source_t *src, bank_db_conn_t *conn);
} bank_db_source_ops;

struct bank_db_source_s {
    const bank_db_source_ops *ops;
    void *data;
    /* SQLite in a threaded server: the process's writer lock (bank_db.c), else NULL. */
    apr_thread_mutex_t *writer_lock;
    /* The process's statement guard (bank_db_guard.h), else NULL. */
    bank_db_guard_t *guard;
};

/* A handle on a connection from src, used through p (results, error texts), logging to where.
 * NULL and *err when the source has none. Re-opens a connection marked read-only whose file
 * can be written again. */
bank_db_t *bank_db_acquire(bank_db_source_t *src, apr_pool_t *p, bank_log_where where,
                           const char **err);
/* Gives the handle's connection back to its source now; db is not used again. */
void bank_db_give(bank_db_t *db);

/* mod_bank's session on a connection just opened (before it is lent): foreign keys and a
 * bounded page cache on SQLite, ISO dates and UTF-8 on PostgreSQL, all logged; a SQLite file
 * that cannot be written marked (it opens read-only for good). Setting the SQLite flag expires
 * statements already prepared there: reprepare=1 prepares conn->statements again into a
 * new conn->prepared. */
void bank_db_conn_setup(bank_db_conn_t *conn, apr_pool_t *ptemp, bank_log_where where,
                        int reprepare);
/* A statement guard for a source's PostgreSQL connections (bank_db_guard.h): it cancels a
 * statement past its connection's timeout through libpq, then cuts its socket. At most slots
 * statements at once; stops with p. NULL if it cannot be started. */
bank_db_guard_t *bank_db_guard_pgsql(apr_pool_t *p, int slots);
/* 1 on PostgreSQL. */
int bank_db_conn_is_pgsql(const bank_db_conn_t *conn);

#endif
