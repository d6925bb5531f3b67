/* apr_dbd's drivers, and the workarounds their quirks need (bank_db_driver.h lists them, D1 to
 * D10, with the versions they were seen in and their tests). The only file of mod_bank that
 * calls apr_dbd_* or libpq. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include "bank_db_driver.h"

/* ---- drivers and connections ---- */

const char *bank_drv_load(apr_pool_t *p, const char *name, const apr_dbd_driver_t **driver)
{
    apr_dbd_init(p);
    if (apr_dbd_get_driver(p, name, driver) != APR_SUCCESS) {
        return apr_psprintf(p, "apr_dbd driver %s is not available (install libaprutil1-dbd-%s)",
                            name, strcmp(name, "pgsql") == 0 ? "pgsql" : "sqlite3");
    }
    return NULL;
}

int bank_drv_is_pgsql(const apr_dbd_driver_t *driver)
{
    return strcmp(apr_dbd_name(driver), "pgsql") == 0;
}

apr_status_t bank_drv_open(const apr_dbd_driver_t *driver, apr_pool_t *p, const char *params,
                           apr_dbd_t **handle, const char **err)
{
    *handle = NULL;
    *err = NULL;
    if (apr_dbd_open_ex(driver, p, params, handle, err) != APR_SUCCESS || !*handle) {
        return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

void bank_drv_close(const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    apr_dbd_close(driver, handle);
}

apr_status_t bank_drv_check(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle)
{
    return apr_dbd_check_conn(driver, p, handle);
}

const char *bank_drv_error_line(apr_pool_t *p, const char *msg)
{
    return msg ? apr_pstrndup(p, msg, strcspn(msg, "\r\n")) : "unknown database error";
}

const char *bank_drv_error(apr_pool_t *p, const apr_dbd_driver_t *driver, apr_dbd_t *handle, int rv)
{
    return bank_drv_error_line(p, apr_dbd_error(driver, handle, rv));
}

/* ---- statements ---- */

int bank_drv_prepare(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle,
                     const char *sql, const char *label, apr_dbd_prepared_t **st)
{
    *st = NULL;
    return apr_dbd_prepare(driver, p, handle, sql, label, st);
}

int bank_drv_query(const apr_dbd_driver_t *driver, apr_dbd_t *handle, const char *sql,
                   int *affected)
{
    int n = 0, rv = apr_dbd_query(driver, handle, &n, sql);

    if (affected) {
        *affected = n;
    }
    return rv;
}

/* D1: random=1 on every select, the only mode in which the pgsql driver reports SQL errors. */
int bank_drv_select(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle,
                    const char *sql, apr_dbd_results_t **res)
{
    *res = NULL;
    return apr_dbd_select(driver, p, handle, res, sql, 1);
}

int bank_drv_pselect(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle,
                     apr_dbd_prepared_t *st, int nargs, const char *const *args,
                     apr_dbd_results_t **res)
{
    *res = NULL;
    return apr_dbd_pselect(driver, p, handle, res, st, 1, nargs, (const char **)args);
}

int bank_drv_pquery(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle,
                    apr_dbd_prepared_t *st, int nargs, const char *const *args, int *affected)
{
    int n = 0, rv = apr_dbd_pquery(driver, p, handle, &n, st, nargs, (const char **)args);

    if (affected) {
        *affected = n;
    }
    return rv;
}

int bank_drv_num_cols(const apr_dbd_driver_t *driver, apr_dbd_results_t *res)
{
    return apr_dbd_num_cols(driver, res);
}

int bank_drv_next_row(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_results_t *res,
                      apr_dbd_row_t **row)
{
    return apr_dbd_get_row(driver, p, res, row, -1);
}

/* D2: apr_dbd_datum_get says APR_ENOENT for NULL on both drivers. */
const char *bank_drv_column(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_row_t *row,
                            int i)
{
    const char *v = NULL;

    if (apr_dbd_datum_get(driver, row, i, APR_DBD_TYPE_STRING, &v) == APR_SUCCESS && v) {
        return apr_pstrdup(p, v);
    }
    return NULL;
}

/* ---- transactions ---- */

int bank_drv_txn_start(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle,
                       apr_dbd_transaction_t **txn, const char **why)
{
    int rv;

    *txn = NULL; /* the driver allocates it; a stale pointer would be reused */
    *why = NULL;
    if ((rv = apr_dbd_transaction_start(driver, p, handle, txn)) == 0) {
        return 0;
    }
    *why = bank_drv_error(p, driver, handle, rv);
    /* D4: the failed BEGIN's transaction stays on the handle: ended here */
    if (*txn) {
        apr_dbd_transaction_mode_set(driver, *txn, APR_DBD_TRANSACTION_ROLLBACK);
        apr_dbd_transaction_end(driver, p, *txn);
        *txn = NULL;
    }
    return rv;
}

int bank_drv_end(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle,
                 apr_dbd_transaction_t *txn, int commit)
{
    int n = 0;

    if (bank_drv_is_pgsql(driver)) { /* D3 */
        return apr_dbd_query(driver, handle, &n, commit ? "COMMIT" : "ROLLBACK");
    }
    if (!commit) {
        apr_dbd_transaction_mode_set(driver, txn, APR_DBD_TRANSACTION_ROLLBACK);
    }
    return apr_dbd_transaction_end(driver, p, txn);
}

int bank_drv_pg_count(const char *value)
{
    return value ? atoi(value) : -1;
}

/* ---- what SQLite's driver hides (D7) ---- */

apr_int64_t bank_drv_sqlite_schema(const apr_dbd_driver_t *driver, apr_pool_t *p, apr_dbd_t *handle)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    const char *v = NULL;

    if (bank_drv_select(driver, p, handle, "PRAGMA schema_version", &res) != 0) {
        return -1;
    }
    while (bank_drv_next_row(driver, p, res, &row) == 0) { /* every row read */
        if (!v) {
            v = bank_drv_column(driver, p, row, 0);
        }
    }
    return v ? apr_atoi64(v) : -1;
}

int bank_drv_sqlite_read_only(const char *error)
{
    return error && strstr(error, "readonly database") != NULL;
}

int bank_drv_sqlite_busy(int rv)
{
    return rv == 5 || rv == 6; /* SQLITE_BUSY, SQLITE_LOCKED */
}

/* ---- libpq, where the pgsql driver loaded it (D6) ---- */

typedef struct {
    int (*socket)(const void *pgconn);
    void *(*get_cancel)(void *pgconn);
    int (*cancel)(void *cancel, char *errbuf, int errbufsize);
    void (*free_cancel)(void *cancel);
} pq_fns;

static pq_fns fns;
static pthread_once_t fns_once = PTHREAD_ONCE_INIT;

static void pq_look(void)
{
    fns.socket = (int (*)(const void *))(apr_uintptr_t)dlsym(RTLD_DEFAULT, "PQsocket");
    fns.get_cancel = (void *(*)(void *))(apr_uintptr_t)dlsym(RTLD_DEFAULT, "PQgetCancel");
    fns.cancel = (int (*)(void *, char *, int))(apr_uintptr_t)dlsym(RTLD_DEFAULT, "PQcancel");
    fns.free_cancel = (void (*)(void *))(apr_uintptr_t)dlsym(RTLD_DEFAULT, "PQfreeCancel");
}

/* libpq's functions, or NULL. Looked up once per process, by whichever thread comes first
 * while the others wait for it: asked only on PostgreSQL connections, so after the pgsql
 * driver, and libpq with it, was loaded. */
static const pq_fns *pq(void)
{
    pthread_once(&fns_once, pq_look);
    return fns.socket ? &fns : NULL;
}

int bank_drv_pg_socket(const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    const pq_fns *f = pq();
    void *pgconn = f && handle ? apr_dbd_native_handle(driver, handle) : NULL;

    return pgconn ? f->socket(pgconn) : -1;
}

int bank_drv_pg_can_cancel(void)
{
    const pq_fns *f = pq();

    return f && f->get_cancel && f->cancel && f->free_cancel;
}

void *bank_drv_pg_cancel_new(const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    void *pgconn;

    if (!bank_drv_pg_can_cancel() || !(pgconn = apr_dbd_native_handle(driver, handle))) {
        return NULL;
    }
    return fns.get_cancel(pgconn);
}

void bank_drv_pg_cancel(void *cancel)
{
    char err[256];

    fns.cancel(cancel, err, (int)sizeof(err));
}

void bank_drv_pg_cancel_free(void *cancel)
{
    fns.free_cancel(cancel);
}
