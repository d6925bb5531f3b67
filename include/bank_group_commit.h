/* Group commit of payment notices: notices that arrive together in one process share one
 * transaction (one commit, one fsync for all of them). No httpd dependency; the host (the
 * webhook handler, the C tests) supplies the connection, the turn across processes and the
 * report of a failure (bank_group_host).
 *
 * A caller queues its notice; if no commit is running on the queue, it takes everything
 * queued (at most the queue's batch size) and commits it on its own connection, else it
 * waits for the one running to finish and then looks again. Each caller returns only once
 * the transaction holding its notice has ended; if it failed, every notice in it has the
 * failure, none is stored. A batch that failed on a healthy connection (a statement refused,
 * not the database busy or gone) is tried again one notice per transaction, so a notice the
 * database refuses fails alone. A batch the database did not take for a reason worth
 * retrying after a wait of BANK_GROUP_SLOW_FAILURE or more (busy, a dead server, a commit that
 * waited past the bound for a standby) fails the notices queued behind it too, at once and
 * worth retrying, rather than starting another commit that would wait as long; until a commit
 * is taken again, a notice that arrives while the next one runs fails the same way at once
 * (one commit at a time tries the database). A failure that came sooner (a read-only file, a
 * connection refused) only fails its own batch: the next commit costs as little. A key twice in one
 * batch is written once, the second a repeat (added 0), as across batches.
 *
 * Everything that must commit together with the notices goes in bank_group_store
 * (bank_group_commit.c), the one place the notices' transaction is written. */
#ifndef BANK_GROUP_COMMIT_H
#define BANK_GROUP_COMMIT_H

#include <apr_pools.h>
#include <apr_thread_cond.h>
#include <apr_time.h>
#include "bank_db.h"
#include "bank_store.h"

typedef struct bank_group_s bank_group_t;

/* A commit not taken after this long (from its leader's start) makes the notices behind it fail
 * at once rather than wait for another try. */
#define BANK_GROUP_SLOW_FAILURE apr_time_from_msec(250)

/* One notice on its way: put filled by the caller; rc and retry when it returns. */
typedef struct bank_group_item_s {
    bank_notice_put_t put;
    bank_db_rc rc;
    int retry; /* rc failed and trying again later may work (the database busy or gone) */
    /* the queue's own */
    int done;
    apr_thread_cond_t *wake; /* this caller's: its notice done, or its turn to lead */
    struct bank_group_item_s *next;
} bank_group_item_t;

/* What a leader needs from its host, with the baton its caller passed. */
typedef struct {
    /* The connection to commit on, or NULL (the host logged why: every notice retry). */
    bank_db_t *(*connect)(void *baton);
    /* The turn across processes (may be NULL: none): 1 if taken, then given back. */
    int (*turn_take)(void *baton);
    void (*turn_give)(void *baton);
    /* A failed commit reported (what: what was being done); 1 if worth retrying later. */
    int (*failed)(void *baton, bank_db_t *db, bank_db_rc rc, const char *what);
} bank_group_host;

/* A queue in p committing at most batch_max notices at once; NULL and *err on failure. */
bank_group_t *bank_group_create(apr_pool_t *p, int batch_max, const char **err);
/* Makes q ready to be queued (its condition in p); APR_SUCCESS or why not. */
apr_status_t bank_group_item_init(bank_group_item_t *q, apr_pool_t *p);
/* Queues q and returns once the transaction holding it has ended (q->rc, q->retry, and
 * q->put.added / matched say how). g NULL: q is committed alone. p: the caller's pool. */
void bank_group_commit(bank_group_t *g, bank_group_item_t *q, const bank_group_host *host,
                       void *baton, apr_pool_t *p);
/* Notices queued and not yet taken by a commit. */
int bank_group_queued(bank_group_t *g);

#endif
