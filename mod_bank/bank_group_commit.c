/* Group commit of payment notices (bank_group_commit.h). Each waiter sleeps on its own
 * condition, woken only when its notice is done or when it is first in the queue and a commit
 * may start (one broadcast per commit woke every waiter of the process: most of httpd's time
 * went to context switches, measured with perf). One commit at a time per queue: on
 * PostgreSQL two at once made smaller batches and no more notices per second. */
#include <apr_strings.h>
#include <apr_thread_mutex.h>
#include "bank_group_commit.h"
#include "bank_log.h"

#define BANK_GROUP_MAX 1024

struct bank_group_s {
    apr_thread_mutex_t *lock;
    bank_group_item_t *head, *tail;
    int queued;
    int running; /* a commit is running */
    int batch_max;
    /* the last commit: BANK_DB_OK, or how the database did not take it after a wait as long as
     * BANK_GROUP_SLOW_FAILURE */
    bank_db_rc failed;
};

bank_group_t *bank_group_create(apr_pool_t *p, int batch_max, const char **err)
{
    bank_group_t *g = apr_pcalloc(p, sizeof(*g));

    if (apr_thread_mutex_create(&g->lock, APR_THREAD_MUTEX_DEFAULT, p) != APR_SUCCESS) {
        *err = "no mutex";
        return NULL;
    }
    g->batch_max = batch_max < 1 ? 1 : batch_max > BANK_GROUP_MAX ? BANK_GROUP_MAX : batch_max;
    return g;
}

apr_status_t bank_group_item_init(bank_group_item_t *q, apr_pool_t *p)
{
    q->done = 0;
    q->next = NULL;
    return apr_thread_cond_create(&q->wake, p);
}

int bank_group_queued(bank_group_t *g)
{
    int n;

    apr_thread_mutex_lock(g->lock);
    n = g->queued;
    apr_thread_mutex_unlock(g->lock);
    return n;
}

/* The notices' transaction: count of them stored in one (bank_store_notices_put). */
static bank_db_rc bank_group_store(bank_db_t *db, bank_notice_put_t **puts, int count)
{
    return bank_store_notices_put(db, puts, count);
}

/* Commits batch (count notices) on db (NULL: none could be had); sets each one's outcome. */
static void commit_batch(const bank_group_host *host, void *baton, apr_pool_t *p, bank_db_t *db,
                         bank_group_item_t **batch, int count)
{
    bank_notice_put_t **puts = apr_palloc(p, sizeof(*puts) * (apr_size_t)count);
    bank_db_rc rc;
    int i, retry = 1;

    for (i = 0; i < count; i++) {
        puts[i] = &batch[i]->put;
        batch[i]->rc = BANK_DB_ERROR;
        batch[i]->retry = 1;
    }
    if (!db) {
        return; /* logged by the host */
    }
    rc = bank_group_store(db, puts, count);
    if (rc != BANK_DB_OK) {
        retry = host->failed(baton, db, rc,
                             apr_psprintf(p,
                                          "storing %d payment notice(s) in one transaction "
                                          "(none stored)",
                                          count));
    }
    if (rc != BANK_DB_OK && !retry && count > 1) {
        for (i = 0; i < count; i++) {
            bank_notice_put_t *one = &batch[i]->put; /* puts is in key order now */
            if ((batch[i]->rc = bank_group_store(db, &one, 1)) != BANK_DB_OK) {
                batch[i]->retry = host->failed(baton, db, batch[i]->rc, "storing a payment notice");
            } else {
                batch[i]->retry = 0;
            }
        }
        return;
    }
    for (i = 0; i < count; i++) {
        batch[i]->rc = rc;
        batch[i]->retry = rc == BANK_DB_OK ? 0 : retry;
    }
    if (rc == BANK_DB_OK) {
        bank_log(bank_db_where(db), BANK_LOG_MARK, BANK_LOG_DEBUG,
                 BANKLOGNO(0708) "%d payment notice(s) committed in one transaction", count);
    }
}

/* 1 if the database took none of the batch and trying again later may work (busy, gone, a
 * commit that waited past the bound for a standby): the database is not committing now. */
static int unavailable(bank_group_item_t **batch, int count)
{
    int i;

    for (i = 0; i < count; i++) {
        if (batch[i]->rc == BANK_DB_OK || !batch[i]->retry) {
            return 0;
        }
    }
    return 1;
}

/* Every notice queued behind a commit the database did not take after a long wait fails as
 * that one did, worth retrying, at once: another commit would wait as long (a standby gone, a
 * lock held), and each one waiting holds an httpd thread, so a queue of them would answer only
 * after several bounds and use up the threads the other requests need. Until a commit is taken
 * again, one commit at a time tries (the next leader's), and what arrives while it runs fails
 * at once the same way. A refusal that came at once (a read-only file, a server that refuses
 * connections) costs the next commit no more than it cost this one: the notices behind it wait
 * for that commit, so none is refused for a failure the database is already past. With
 * g->lock held. */
static void fail_queued(bank_group_t *g, bank_db_rc rc)
{
    while (g->head) {
        bank_group_item_t *x = g->head;
        g->head = x->next;
        g->queued--;
        x->rc = rc;
        x->retry = 1;
        x->done = 1;
        apr_thread_cond_signal(x->wake);
    }
    g->tail = NULL;
}

/* After a commit, with g->lock held: each notice of batch done and woken (q, the leader, is
 * awake); if the database did not take it after a long wait, what is queued fails at once; the
 * next commit's leader woken. */
static void batch_done(bank_group_t *g, bank_group_item_t *q, bank_group_item_t **batch, int count,
                       apr_time_t began)
{
    int i;

    g->running = 0;
    for (i = 0; i < count; i++) {
        batch[i]->done = 1;
        if (batch[i] != q) {
            apr_thread_cond_signal(batch[i]->wake);
        }
    }
    g->failed =
        count > 0 && unavailable(batch, count) && apr_time_now() - began >= BANK_GROUP_SLOW_FAILURE
            ? batch[0]->rc
            : BANK_DB_OK;
    if (g->failed != BANK_DB_OK) {
        fail_queued(g, g->failed);
    }
    if (g->head) {
        apr_thread_cond_signal(g->head->wake); /* the next commit */
    }
}

/* q is first in the queue and no commit is running: wait for the turn, then lead everything
 * queued by then, up to batch_max. Called with g->lock held, which is released meanwhile. */
static void lead(bank_group_t *g, bank_group_item_t *q, const bank_group_host *host, void *baton,
                 apr_pool_t *p, bank_group_item_t **batch)
{
    bank_db_t *db;
    apr_time_t began;
    int count, turn;

    g->running = 1;
    apr_thread_mutex_unlock(g->lock);
    began = apr_time_now();
    db = host->connect(baton); /* before the turn: none held while waiting for it */
    turn = db && host->turn_take ? host->turn_take(baton) : 0;
    apr_thread_mutex_lock(g->lock);
    for (count = 0; count < g->batch_max && g->head; count++) {
        batch[count] = g->head;
        g->head = g->head->next;
    }
    if (!g->head) {
        g->tail = NULL;
    }
    g->queued -= count;
    apr_thread_mutex_unlock(g->lock);
    commit_batch(host, baton, p, db, batch, count);
    if (turn) {
        host->turn_give(baton);
    }
    apr_thread_mutex_lock(g->lock);
    batch_done(g, q, batch, count, began);
}

void bank_group_commit(bank_group_t *g, bank_group_item_t *q, const bank_group_host *host,
                       void *baton, apr_pool_t *p)
{
    bank_group_item_t **batch;

    if (!g) {
        commit_batch(host, baton, p, host->connect(baton), &q, 1);
        return;
    }
    batch = apr_palloc(p, sizeof(*batch) * (apr_size_t)g->batch_max);
    apr_thread_mutex_lock(g->lock);
    if (g->running && g->failed != BANK_DB_OK) {
        /* the last commit was not taken and the one running tries again: no other waits */
        q->rc = g->failed;
        q->retry = 1;
        q->done = 1;
        apr_thread_mutex_unlock(g->lock);
        return;
    }
    if (g->tail) {
        g->tail->next = q;
    } else {
        g->head = q;
    }
    g->tail = q;
    g->queued++;
    while (!q->done) {
        if (g->running || g->head != q) {
            apr_thread_cond_wait(q->wake, g->lock);
            continue;
        }
        lead(g, q, host, baton, p, batch);
    }
    apr_thread_mutex_unlock(g->lock);
}
