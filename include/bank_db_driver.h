/* The bottom of the data layer: apr_dbd's drivers, and every workaround mod_bank needs for
 * them, behind plain functions. It is the only file that calls apr_dbd_* (scripts/check-layers)
 * or looks at libpq; the layers above it (bank_db_wait.c, bank_db.c, bank_db_txn.c,
 * bank_db_conn.c, in that order) call it and never each other upwards. Only the data layer and
 * the C tests include this header. mod_dbd's own quirks are the glue's: mod_bank_dbd.h.
 *
 * Seen with Debian 12's packages: libaprutil1 and libaprutil1-dbd-{pgsql,sqlite3}
 * 1.6.3-1+deb12u1 (apr-util 1.6.3), libpq5 15.18-0+deb12u1, SQLite 3.40, apache2-bin
 * 2.4.71-1~deb12u1. Each quirk, where it is answered, and the test that shows it:
 *
 *  D1 pgsql: apr_dbd_select and apr_dbd_pselect with random=0 report a failed statement as
 *     a success with no rows. Every select here passes random=1 (bank_drv_select,
 *     bank_drv_pselect). Test: t/unit/test_db_pg.c, test_errors.
 *  D2 apr_dbd_get_entry gives "" for SQL NULL on pgsql and NULL on sqlite3: columns are read
 *     with apr_dbd_datum_get, which says APR_ENOENT for NULL on both (bank_drv_column).
 *     Tests: t/unit/test_db_pg.c, test_values; t/unit/test_db_sqlite.c, test_null.
 *  D3 pgsql: transaction_start dereferences a NULL transaction when BEGIN fails with a result,
 *     as it does on a connection the server closed (a restart): the httpd child crashes.
 *     PostgreSQL's transactions are plain statements (BANK_DRV_PG_BEGIN_SQL, bank_drv_end);
 *     bank_drv_txn_start is SQLite's only. Tests: t/unit/test_db_pg.c, test_lost_connection;
 *     t/api/resilience/pg_restart.t.
 *  D4 sqlite3: a BEGIN that fails (the database locked) leaves its transaction on the handle,
 *     and every later statement on that pooled connection reports the same error:
 *     bank_drv_txn_start ends it at once. Test: t/unit/test_db_sqlite.c, test_begin_busy.
 *  D5 pgsql: check_conn (mod_dbd calls it on every acquire) answers a closed connection with
 *     PQreset, a new session without the prepared statements or the set-up SQL, which a pool
 *     keeps lending as healthy; every statement on it fails ("prepared statement ... does not
 *     exist"). The session's prepared statements are counted after a failed statement and in
 *     every BEGIN's round trip (BANK_DRV_PG_COUNT_SQL, BANK_DRV_PG_BEGIN_SQL,
 *     bank_drv_pg_count); none where some are expected is a re-opened session, which
 *     bank_db_conn.c restores. Tests: t/unit/test_db_pg.c, test_lost_connection and
 *     test_read_only; t/api/resilience/pg_restart.t, pg_failover.t.
 *  D6 The module does not link libpq (a SQLite-only server needs none), yet bounded waits need
 *     PQsocket and PQcancel: they are looked up with dlsym where the pgsql driver loaded libpq,
 *     once per process under pthread_once (no thread sees a half-filled table).
 *     Tests: t/unit/test_db_pg.c, test_libpq_threads; t/api/resilience/pg_commit_wait.t.
 *  D7 sqlite3: statements are prepared with the legacy sqlite3_prepare, so (a) a schema change
 *     (a migration by bankctl or another program) expires them for good, even once undone:
 *     the connection's schema version is kept (bank_drv_sqlite_schema) and a connection
 *     prepared before a change is replaced (the version read before and after its statements
 *     are prepared must agree, bank_db_conn.c: a change meanwhile prepares them again); (b) a
 *     failed step says SQLITE_ERROR whatever the reason: a write refused as read-only is known
 *     by its text (bank_drv_sqlite_read_only).
 *     Tests: t/unit/test_db_sqlite.c, test_schema_change and run_tests; test_sign_in.c,
 *     test_older_schema; t/api/resilience/sqlite_readonly.t, t/api/operations/upgrade_sqlite.t.
 *  D8 sqlite3: every call of the driver runs under one process-wide mutex, and SQLite's
 *     busy_timeout waits inside such a call: a thread waiting there for the write lock that
 *     another thread of the same process holds keeps that thread from going on (10 s a
 *     statement with busy_timeout 10000). Writers of a process take turns before they reach
 *     the driver (the writer lock: bank_db_hold in bank_db.c, bank_db_source_t).
 *     Test: t/api/endpoints/bvn_race.t (no request stalled).
 *  D9 sqlite3: apr_dbd_query reports an error for a statement that returns a row, such as
 *     "PRAGMA busy_timeout = N": such set-up statements run through bank_drv_query and their
 *     result is not read as a failure. Tests: t/unit/test_db_sqlite.c, test_null;
 *     t/api/resilience/sqlite_session.t.
 *  D10 apr_dbd turns every "%" and a letter into a parameter, even inside a string literal:
 *     not code but a rule for SQL text (bank_sql.c writes "%%"); pgsql prepares "%s" as
 *     varchar (bank_sql.c's {markers} add the casts). Test: t/unit/test_db_pg.c,
 *     test_statements. */
#ifndef BANK_DB_DRIVER_H
#define BANK_DB_DRIVER_H

#include <apr_dbd.h>
#include <apr_pools.h>

/* ---- drivers and connections ---- */

/* Loads driver name ("sqlite3", "pgsql"); NULL or why not. */
const char *bank_drv_load(apr_pool_t *p, const char *name, const apr_dbd_driver_t **driver);
/* 1 on PostgreSQL. */
int bank_drv_is_pgsql(const apr_dbd_driver_t *driver);
/* Opens a connection with apr_dbd_open's params; APR_SUCCESS, else *err says why. */
apr_status_t bank_drv_open(const apr_dbd_driver_t *driver, apr_pool_t *p, const char *params,
                           apr_dbd_t **handle, const char **err);
void bank_drv_close(const apr_dbd_driver_t *driver, apr_dbd_t *handle);
/* APR_SUCCESS if the connection answers; on PostgreSQL a closed one is re-opened (D5). */
apr_status_t bank_drv_check(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle);
/* The driver's text for rv (0: the last error), its first line only: PostgreSQL's DETAIL line
 * quotes key values (a BVN, an e-mail). A fixed text for none. */
const char *bank_drv_error(apr_pool_t *p, const apr_dbd_driver_t *driver, apr_dbd_t *handle,
                           int rv);
/* A driver's error text fit for a log: its first line, or a fixed text for NULL. */
const char *bank_drv_error_line(apr_pool_t *p, const char *msg);

/* ---- statements ---- */

/* Prepares sql, under label on a PostgreSQL server (NULL: unnamed). 0 or the driver's code;
 * *st NULL when nothing was prepared. */
int bank_drv_prepare(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle,
                     const char *sql, const char *label, apr_dbd_prepared_t **st);
/* SQL text of our own, no rows (D9); *affected may be NULL. 0 or the driver's code. */
int bank_drv_query(const apr_dbd_driver_t *driver, apr_dbd_t *handle, const char *sql,
                   int *affected);
/* SQL text of our own with rows (D1). */
int bank_drv_select(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle,
                    const char *sql, apr_dbd_results_t **res);
/* A prepared statement with rows (D1), and one without. */
int bank_drv_pselect(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle,
                     apr_dbd_prepared_t *st, int nargs, const char *const *args,
                     apr_dbd_results_t **res);
int bank_drv_pquery(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle,
                    apr_dbd_prepared_t *st, int nargs, const char *const *args, int *affected);
int bank_drv_num_cols(const apr_dbd_driver_t *driver, apr_dbd_results_t *res);
/* The next row of res, in order: 0, or -1 after the last (read every row: a result left
 * pending poisons a pooled PostgreSQL connection). */
int bank_drv_next_row(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_results_t *res,
                      apr_dbd_row_t **row);
/* Column i of row as text in p, NULL for SQL NULL on either driver (D2). */
const char *bank_drv_column(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_row_t *row,
                            int i);

/* ---- transactions ---- */

/* SQLite's BEGIN through the driver (D3: never on PostgreSQL). 0, or the driver's code with
 * its text in *why, and no transaction left on the handle (D4). */
int bank_drv_txn_start(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle,
                       apr_dbd_transaction_t **txn, const char **why);
/* Ends a transaction: SQLite's txn through the driver, PostgreSQL's as a plain COMMIT or
 * ROLLBACK (D3). 0 or the driver's code. */
int bank_drv_end(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle,
                 apr_dbd_transaction_t *txn, int commit);
/* PostgreSQL's BEGIN, in the same round trip as counting the session's prepared statements
 * (D3, D5); its one value is read by bank_drv_pg_count. */
#define BANK_DRV_PG_COUNT_SQL "SELECT count(*) FROM pg_prepared_statements"
#define BANK_DRV_PG_BEGIN_SQL "BEGIN; " BANK_DRV_PG_COUNT_SQL
/* The count BANK_DRV_PG_COUNT_SQL answered, or -1 for no answer (D5). */
int bank_drv_pg_count(const char *value);

/* ---- what SQLite's driver hides (D7) ---- */

/* The schema version SQLite sees on handle now, or -1. */
apr_int64_t bank_drv_sqlite_schema(const apr_dbd_driver_t *driver, apr_pool_t *p,
                                   apr_dbd_t *handle);
/* 1 if a failed statement's text (bank_drv_error) says SQLITE_READONLY. */
int bank_drv_sqlite_read_only(const char *error);
/* 1 if rv is SQLITE_BUSY or SQLITE_LOCKED (after the driver's retries and busy_timeout). */
int bank_drv_sqlite_busy(int rv);

/* ---- libpq, where the pgsql driver loaded it (D6) ---- */

/* A PostgreSQL connection's socket, or -1 (libpq not loaded, no handle). */
int bank_drv_pg_socket(const apr_dbd_driver_t *driver, apr_dbd_t *handle);
/* 1 if statements can be cancelled (libpq has PQgetCancel, PQcancel, PQfreeCancel). */
int bank_drv_pg_can_cancel(void);
/* A cancel request for the connection's statement under way (NULL: none can be made); sent
 * by bank_drv_pg_cancel (which may block as long as the server does not answer) and freed by
 * bank_drv_pg_cancel_free. */
void *bank_drv_pg_cancel_new(const apr_dbd_driver_t *driver, apr_dbd_t *handle);
void bank_drv_pg_cancel(void *cancel);
void bank_drv_pg_cancel_free(void *cancel);

#endif
