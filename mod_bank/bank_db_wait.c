/* The data layer's bounded waits on PostgreSQL (bank_db_wait.h: bank_db_bound_enter and
 * bank_db_bound_leave around a statement; bank_db_guard_pgsql, the process's guard), through
 * libpq's cancel and socket (bank_db_driver.h, D6). */
#include <apr_strings.h>
#include "bank_db_source.h"
#include "bank_db_wait.h"

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

bank_db_guard_t *bank_db_guard_pgsql(apr_pool_t *p, int slots)
{
    int can = bank_drv_pg_can_cancel();

    return bank_db_guard_start(p, slots, apr_time_from_msec(100), can ? bank_drv_pg_cancel : NULL,
                               can ? bank_drv_pg_cancel_free : NULL);
}

void bank_db_bound_enter(bank_db_bound_t *b, const apr_dbd_driver_t *driver, apr_dbd_t *handle,
                         bank_db_watch_t *w)
{
    int fd;

    w->ticket = -1;
    w->start = 0;
    if (b->timeout <= 0 || !bank_drv_is_pgsql(driver)) {
        return;
    }
    w->start = apr_time_now();
    if (b->guard && (fd = bank_drv_pg_socket(driver, handle)) >= 0) {
        w->ticket = bank_db_guard_enter(b->guard, fd, w->start + b->timeout + BANK_DB_GUARD_CANCEL,
                                        w->start + b->timeout + BANK_DB_GUARD_CUT,
                                        bank_drv_pg_cancel_new(driver, handle));
    }
}

int bank_db_bound_leave(bank_db_bound_t *b, apr_pool_t *p, bank_db_watch_t *w, int rv, int commits)
{
    if (!w->start) {
        return rv;
    }
    if (bank_db_guard_leave(b->guard, w->ticket) == BANK_GUARD_CUT) {
        b->cause = apr_psprintf(p,
                                "the database server did not answer within %" APR_TIME_T_FMT
                                " s (BankDatabaseTimeout and a grace period): connection closed",
                                apr_time_sec(b->timeout + BANK_DB_GUARD_CUT));
        b->cut = 1;
        return rv ? rv : BANK_DB_RV_UNCONFIRMED;
    }
    if (rv == 0 && commits && apr_time_now() - w->start >= b->timeout) {
        b->cause = apr_psprintf(p,
                                "commit waited for synchronous replication longer than "
                                "%" APR_TIME_T_FMT " s (BankDatabaseTimeout), then cancelled: "
                                "kept on the primary, not confirmed by a standby",
                                apr_time_sec(b->timeout));
        return BANK_DB_RV_UNCONFIRMED;
    }
    return rv;
}
