/* Inside the data layer only: the bound on how long one PostgreSQL statement waits
 * (bank_db_wait.c), above the driver (bank_db_driver.h) and below the handle (bank_db.c). */
#ifndef BANK_DB_WAIT_H
#define BANK_DB_WAIT_H

#include <apr_time.h>
#include "bank_db_driver.h"
#include "bank_db_guard.h"

/* A connection's bound: how long one statement may wait (0: no bound), the process's guard
 * (NULL: none), and what the last watched call left: why it failed when the reason is ours,
 * not the driver's (the guard cut it; a commit came back past the bound), and whether the
 * guard cut the connection. */
typedef struct {
    apr_interval_time_t timeout;
    bank_db_guard_t *guard;
    const char *cause;
    int cut;
} bank_db_bound_t;

/* What a driver call returns when it succeeded but mod_bank counts it failed (cause): a
 * commit that came back only after the bound. */
#define BANK_DB_RV_UNCONFIRMED (-9001)

/* One watched call: bank_db_bound_enter before the driver call on a PostgreSQL connection,
 * bank_db_bound_leave after it with its return value (commits: the call may commit a write)
 * gives the value to go on with. */
typedef struct {
    int ticket;
    apr_time_t start;
} bank_db_watch_t;
void bank_db_bound_enter(bank_db_bound_t *b, const apr_dbd_driver_t *driver, apr_dbd_t *handle,
                         bank_db_watch_t *w);
int bank_db_bound_leave(bank_db_bound_t *b, apr_pool_t *p, bank_db_watch_t *w, int rv, int commits);

#endif
