/* The data layer's bounded waits on PostgreSQL (bank_db_internal.h: bank_db_watch_begin and
 * bank_db_watch_end around a statement; bank_db_guard_pgsql, the process's guard): libpq's
 * cancel and socket functions, looked up where apr_dbd's pgsql driver loaded libpq. */
#include <dlfcn.h>
#include <apr_strings.h>
#include "bank_db.h"
#include "bank_db_internal.h"

/* ---- bounded waits on PostgreSQL ----
 * A session's statement_timeout and lock_timeout (bank_db_conn.c) make the server give up a
 * statement past the bound, with an error. Two waits remain. A commit waiting for a
 * synchronous standby that is gone: statement_timeout does not cover it (the server stops
 * the timer before it commits), and a cancel ends the wait but not the commit, which then
 * succeeds with only a warning, the write kept on the primary and confirmed by no standby.
 * And a server that does not answer at all (stopped, frozen). The statement guard
 * (bank_db_guard.h) covers both: a moment after the bound it cancels the statement as any
 * client may (PQcancel: the commit's wait ends and its backend is free again), and if even
 * that brings no answer it shuts the socket down, so the blocked call fails and the
 * connection counts as lost. A commit that came back only after the bound is counted failed
 * (503: the client's retry is safe, see docs/deployment.md). */
#define BANK_DB_GUARD_CANCEL apr_time_from_msec(250)
#define BANK_DB_GUARD_CUT apr_time_from_msec(1500)

/* libpq's functions, looked up where apr_dbd's pgsql driver loaded libpq (the module does not
 * link libpq itself, so a SQLite-only server needs none). */
typedef struct {
    int (*socket)(const void *pgconn);
    void *(*get_cancel)(void *pgconn);
    int (*cancel)(void *cancel, char *errbuf, int errbufsize);
    void (*free_cancel)(void *cancel);
} pq_fns;

static const pq_fns *pq(void)
{
    static pq_fns fns;
    static int looked;

    if (!looked) { /* the same answers whichever thread looks first */
        fns.socket = (int (*)(const void *))(apr_uintptr_t)dlsym(RTLD_DEFAULT, "PQsocket");
        fns.get_cancel = (void *(*)(void *))(apr_uintptr_t)dlsym(RTLD_DEFAULT, "PQgetCancel");
        fns.cancel = (int (*)(void *, char *, int))(apr_uintptr_t)dlsym(RTLD_DEFAULT, "PQcancel");
        fns.free_cancel = (void (*)(void *))(apr_uintptr_t)dlsym(RTLD_DEFAULT, "PQfreeCancel");
        looked = 1;
    }
    return fns.socket ? &fns : NULL;
}

int bank_db_pg_socket(bank_db_t *db)
{
    const pq_fns *f = pq();
    void *pgconn = f ? apr_dbd_native_handle(db->driver, db->handle) : NULL;

    return pgconn ? f->socket(pgconn) : -1;
}

/* The guard's cancel pair (bank_db_guard.h): PQcancel on a PGcancel made for the statement. */
static void pg_cancel(void *arg)
{
    char err[256];

    pq()->cancel(arg, err, (int)sizeof(err));
}

static void pg_cancel_free(void *arg)
{
    pq()->free_cancel(arg);
}

bank_db_guard_t *bank_db_guard_pgsql(apr_pool_t *p, int slots)
{
    const pq_fns *f = pq();
    int can = f && f->get_cancel && f->cancel && f->free_cancel;

    return bank_db_guard_start(p, slots, apr_time_from_msec(100), can ? pg_cancel : NULL,
                               can ? pg_cancel_free : NULL);
}

void bank_db_watch_begin(bank_db_t *db, bank_db_watch_t *w)
{
    const pq_fns *f;
    void *pgconn, *cancel = NULL;

    w->ticket = -1;
    w->start = 0;
    if (db->timeout <= 0 || !bank_db_is_pgsql(db)) {
        return;
    }
    w->start = apr_time_now();
    if (db->guard && (f = pq()) != NULL &&
        (pgconn = apr_dbd_native_handle(db->driver, db->handle)) != NULL) {
        if (f->get_cancel) {
            cancel = f->get_cancel(pgconn);
        }
        w->ticket = bank_db_guard_enter(db->guard, f->socket(pgconn),
                                        w->start + db->timeout + BANK_DB_GUARD_CANCEL,
                                        w->start + db->timeout + BANK_DB_GUARD_CUT, cancel);
    }
}

int bank_db_watch_end(bank_db_t *db, bank_db_watch_t *w, int rv, int commits)
{
    if (!w->start) {
        return rv;
    }
    if (bank_db_guard_leave(db->guard, w->ticket) == BANK_GUARD_CUT) {
        db->cause = apr_psprintf(db->pool,
                                 "the database server did not answer within %" APR_TIME_T_FMT
                                 " s (BankDatabaseTimeout and a grace period): connection closed",
                                 apr_time_sec(db->timeout + BANK_DB_GUARD_CUT));
        db->conn_lost = 1;
        return rv ? rv : BANK_DB_RV_UNCONFIRMED;
    }
    if (rv == 0 && commits && apr_time_now() - w->start >= db->timeout) {
        db->cause = apr_psprintf(db->pool,
                                 "commit waited for synchronous replication longer than "
                                 "%" APR_TIME_T_FMT " s (BankDatabaseTimeout), then cancelled: "
                                 "kept on the primary, not confirmed by a standby",
                                 apr_time_sec(db->timeout));
        return BANK_DB_RV_UNCONFIRMED;
    }
    return rv;
}
