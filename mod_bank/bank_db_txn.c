/* The data layer's transactions (bank_db.h): begin, end, and bank_db_transaction, which
 * runs a callback between a BEGIN and a COMMIT or ROLLBACK. SQLite's go through the driver
 * under the process's writer lock; PostgreSQL's are plain statements (bank_db_driver.h, D3).
 * Above the handle (bank_db.c), below connections (bank_db_conn.c). */
#include "bank_db.h"
#include "bank_db_internal.h"

/* A transaction still open when its pool goes away (an early return between begin and
 * end) is rolled back, so the pooled connection never goes back to mod_dbd inside one. A
 * pre-cleanup: it runs before mod_dbd's release and before subpools (where the connection
 * lives with DBDPersist Off: mod_bank_dbd.h, M6) are destroyed. */
static apr_status_t rollback_open_txn(void *data)
{
    bank_db_t *db = data;
    if (db->in_txn) {
        bank_db_end(db, 0);
    }
    return APR_SUCCESS;
}

/* PostgreSQL's BEGIN, a plain statement (D3), in the same round trip as counting the
 * session's prepared statements (D5): none where some are expected means libpq re-opened the
 * connection under mod_dbd, and the module repairs it before the transaction (inside one,
 * every prepared statement would fail). */
static bank_db_rc pg_begin(bank_db_t *db, int *fresh)
{
    const char *count = NULL;
    bank_db_rc rc;
    int rv = bank_db_query_value(db, BANK_DRV_PG_BEGIN_SQL, &count);

    if (rv != 0) {
        rc = bank_db_classify(db, rv);
        /* never leave a half-begun transaction on the connection (fails fast if lost) */
        bank_drv_end(db->driver, db->pool, db->handle, NULL, 0);
        return rc;
    }
    *fresh = bank_drv_pg_count(count) == 0;
    return BANK_DB_OK;
}

/* COMMIT or ROLLBACK, watched; a COMMIT that came back only after the bound failed
 * (bank_db_wait.c). */
static int end_watched(bank_db_t *db, int commit)
{
    bank_db_watch_t w;

    bank_db_watch_begin(db, &w);
    return bank_db_watch_end(db, &w,
                             bank_drv_end(db->driver, db->pool, db->handle, db->txn, commit),
                             commit && bank_db_is_pgsql(db));
}

/* The sqlite3 driver's BEGIN, under the writer lock until bank_db_end. */
static bank_db_rc sqlite_begin(bank_db_t *db)
{
    const char *why = NULL;
    int rv;

    bank_db_hold(db);
    if ((rv = bank_drv_txn_start(db->driver, db->pool, db->handle, &db->txn, &why)) == 0) {
        return BANK_DB_OK;
    }
    bank_db_release(db);
    return bank_db_classify_text(db, rv, why);
}

bank_db_rc bank_db_begin(bank_db_t *db)
{
    bank_db_rc rc;
    int fresh = 0;

    db->txn = NULL; /* the driver allocates it; a stale pointer would be reused */
    db->txn_failed = 0;
    db->in_txn = 0;
    if (!bank_db_is_pgsql(db)) {
        rc = sqlite_begin(db);
    } else {
        rc = pg_begin(db, &fresh);
        if (bank_db_retry(db, rc, 1)) {
            rc = pg_begin(db, &fresh);
        } else if (rc == BANK_DB_OK && fresh && bank_db_expects(db)) {
            end_watched(db, 0);
            bank_db_recover(db);
            rc = pg_begin(db, &fresh);
        }
    }
    if (rc != BANK_DB_OK) {
        return rc;
    }
    db->in_txn = 1;
    if (!db->txn_cleanup) {
        /* A pre-cleanup: with DBDPersist Off the connection lives in a subpool of r->pool,
         * destroyed before r->pool's own cleanups run. */
        apr_pool_pre_cleanup_register(db->pool, db, rollback_open_txn);
        db->txn_cleanup = 1;
    }
    return BANK_DB_OK;
}

bank_db_rc bank_db_end(bank_db_t *db, int commit)
{
    int failed = db->txn_failed, rv;

    if (!db->in_txn) {
        return BANK_DB_ERROR;
    }
    rv = end_watched(db, commit && !failed);
    db->txn = NULL;
    db->in_txn = 0;
    db->txn_failed = 0;
    bank_db_release(db);
    if (rv != 0) {
        return bank_db_classify(db, rv);
    }
    return failed && commit ? BANK_DB_ERROR : BANK_DB_OK;
}

/* The callback between BEGIN and COMMIT; *rolled_back: it failed and nothing was written. */
static bank_db_rc transaction_once(bank_db_t *db, bank_db_txn_fn fn, void *baton, int *rolled_back)
{
    bank_db_rc rc = bank_db_begin(db);
    const char *err;

    *rolled_back = 0;
    if (rc != BANK_DB_OK) {
        return rc;
    }
    rc = fn(db, baton);
    if (rc == BANK_DB_OK) {
        return bank_db_end(db, 1);
    }
    err = db->error;
    bank_db_end(db, 0);
    db->error = err; /* the cause, not the rollback's echo of it */
    *rolled_back = 1;
    return rc == BANK_DB_ROLLBACK ? BANK_DB_OK : rc;
}

bank_db_rc bank_db_transaction(bank_db_t *db, bank_db_txn_fn fn, void *baton)
{
    int rolled_back, tries;
    bank_db_rc rc = transaction_once(db, fn, baton, &rolled_back);

    /* SQLite: a statement prepared before a migration changed the schema fails, and its
     * transaction with it (bank_db_driver.h, D7); so does a write on a connection opened
     * while the file was read-only. Rolled back, nothing was written: on the new connection
     * the recovery opens (FRESH), the whole transaction runs again: up to
     * BANK_DB_FRESH_TRIES times in all, as bankctl migrate commits its files one after the
     * other. PostgreSQL's failures are not of this kind. */
    for (tries = 1; tries < BANK_DB_FRESH_TRIES && rolled_back && rc == BANK_DB_ERROR &&
                    !bank_db_is_pgsql(db) && bank_db_retry(db, rc, 0);
         tries++) {
        rc = transaction_once(db, fn, baton, &rolled_back);
    }
    return rc;
}
