/* The statement guard (bank_db_guard.h): a table of watched statements under one mutex, and a
 * thread that wakes every tick (or at once when stopped). A slot is only touched under the
 * mutex, so a socket is never shut down after its statement left the guard (its descriptor
 * may belong to something else by then). A cancel runs on a thread of its own that owns its
 * argument and touches nothing of the guard's: it may block as long as the server does not
 * answer, and the guard goes on; the guard joins it once it ended (pthread_tryjoin_np), and
 * when the guard stops, one still blocked is left to end by itself (detached). */
#include <pthread.h>
#include <sys/socket.h>
#include <apr_thread_proc.h>
#include <apr_thread_mutex.h>
#include <apr_thread_cond.h>
#include "bank_db_guard.h"

typedef struct {
    int fd; /* -1: free */
    bank_db_guard_act act;
    apr_time_t cancel_at, cut_at;
    void *arg; /* the slot's until a cancel takes it */
} slot_t;

struct bank_db_guard_s {
    pthread_t *cancels; /* cancel threads not joined yet */
    int ncancels, maxcancels;
    apr_thread_mutex_t *lock;
    apr_thread_cond_t *wake;
    apr_thread_t *thread;
    apr_interval_time_t tick;
    slot_t *slots;
    int nslots;
    int stopping;
    unsigned long cancelled, cut;
};

/* The process's cancel pair: written before any guard thread starts (pthread_create orders
 * it before every read), the same for every guard of the process. */
static bank_db_guard_fn cancel_fn, release_fn;

static void release(void *arg)
{
    if (arg && release_fn) {
        release_fn(arg);
    }
}

static void *run_cancel(void *arg)
{
    cancel_fn(arg);
    release(arg);
    return NULL;
}

/* 1 if a thread of its own now cancels with arg (and owns it). Under the guard's lock. */
static int start_cancel(bank_db_guard_t *g, void *arg)
{
    if (!cancel_fn || !arg || g->ncancels == g->maxcancels ||
        pthread_create(&g->cancels[g->ncancels], NULL, run_cancel, arg) != 0) {
        return 0;
    }
    g->ncancels++;
    return 1;
}

/* Joins the cancel threads that ended (all of them, waiting, if wait; else the others are
 * detached). Under the guard's lock, or once the guard's thread is gone. */
static void reap_cancels(bank_db_guard_t *g, int stopping)
{
    int i = 0;

    while (i < g->ncancels) {
        if (pthread_tryjoin_np(g->cancels[i], NULL) == 0 ||
            (stopping && pthread_detach(g->cancels[i]) == 0)) {
            g->cancels[i] = g->cancels[--g->ncancels];
        } else {
            i++;
        }
    }
}

static void *APR_THREAD_FUNC watch(apr_thread_t *thread, void *data)
{
    bank_db_guard_t *g = data;
    int i;

    apr_thread_mutex_lock(g->lock);
    while (!g->stopping) {
        apr_time_t now = apr_time_now();
        for (i = 0; i < g->nslots; i++) {
            slot_t *s = &g->slots[i];
            if (s->fd < 0 || s->act == BANK_GUARD_CUT) {
                continue;
            }
            if (now >= s->cut_at) {
                shutdown(s->fd, SHUT_RDWR);
                s->act = BANK_GUARD_CUT;
                g->cut++;
            } else if (now >= s->cancel_at && s->act == BANK_GUARD_NONE) {
                s->act = BANK_GUARD_CANCELLED;
                if (start_cancel(g, s->arg)) {
                    s->arg = NULL;
                    g->cancelled++;
                }
            }
        }
        reap_cancels(g, 0);
        apr_thread_cond_timedwait(g->wake, g->lock, g->tick);
    }
    apr_thread_mutex_unlock(g->lock);
    apr_thread_exit(thread, APR_SUCCESS);
    return NULL;
}

static apr_status_t stop(void *data)
{
    bank_db_guard_t *g = data;
    apr_status_t rv;
    int i;

    apr_thread_mutex_lock(g->lock);
    g->stopping = 1;
    apr_thread_cond_signal(g->wake);
    apr_thread_mutex_unlock(g->lock);
    apr_thread_join(&rv, g->thread);
    reap_cancels(g, 1);
    for (i = 0; i < g->nslots; i++) {
        if (g->slots[i].fd >= 0) {
            release(g->slots[i].arg);
            g->slots[i].fd = -1;
        }
    }
    return APR_SUCCESS;
}

bank_db_guard_t *bank_db_guard_start(apr_pool_t *p, int slots, apr_interval_time_t tick,
                                     bank_db_guard_fn cancel, bank_db_guard_fn rel)
{
    bank_db_guard_t *g = apr_pcalloc(p, sizeof(*g));
    int i;

    cancel_fn = cancel;
    release_fn = rel;
    g->nslots = slots > 0 ? slots : 1;
    g->tick = tick > 0 ? tick : apr_time_from_msec(100);
    g->slots = apr_pcalloc(p, sizeof(*g->slots) * (apr_size_t)g->nslots);
    g->maxcancels = g->nslots * 2;
    g->cancels = apr_pcalloc(p, sizeof(*g->cancels) * (apr_size_t)g->maxcancels);
    for (i = 0; i < g->nslots; i++) {
        g->slots[i].fd = -1;
    }
    if (apr_thread_mutex_create(&g->lock, APR_THREAD_MUTEX_DEFAULT, p) != APR_SUCCESS ||
        apr_thread_cond_create(&g->wake, p) != APR_SUCCESS ||
        apr_thread_create(&g->thread, NULL, watch, g, p) != APR_SUCCESS) {
        return NULL;
    }
    /* A pre-cleanup: the thread is joined before the pool frees what it reads. */
    apr_pool_pre_cleanup_register(p, g, stop);
    return g;
}

int bank_db_guard_enter(bank_db_guard_t *g, int fd, apr_time_t cancel_at, apr_time_t cut_at,
                        void *arg)
{
    int i, ticket = -1;

    if (!g || fd < 0) {
        release(arg);
        return -1;
    }
    apr_thread_mutex_lock(g->lock);
    for (i = 0; i < g->nslots; i++) {
        slot_t *s = &g->slots[i];
        if (s->fd < 0) {
            s->fd = fd;
            s->act = BANK_GUARD_NONE;
            s->cancel_at = cancel_at;
            s->cut_at = cut_at;
            s->arg = arg;
            ticket = i;
            break;
        }
    }
    apr_thread_mutex_unlock(g->lock);
    if (ticket < 0) {
        release(arg);
    }
    return ticket;
}

bank_db_guard_act bank_db_guard_leave(bank_db_guard_t *g, int ticket)
{
    bank_db_guard_act act;
    void *arg;

    if (!g || ticket < 0 || ticket >= g->nslots) {
        return BANK_GUARD_NONE;
    }
    apr_thread_mutex_lock(g->lock);
    act = g->slots[ticket].act;
    arg = g->slots[ticket].arg;
    g->slots[ticket].arg = NULL;
    g->slots[ticket].fd = -1;
    apr_thread_mutex_unlock(g->lock);
    release(arg);
    return act;
}

void bank_db_guard_counts(bank_db_guard_t *g, unsigned long *cancelled, unsigned long *cut)
{
    *cancelled = *cut = 0;
    if (g) {
        apr_thread_mutex_lock(g->lock);
        *cancelled = g->cancelled;
        *cut = g->cut;
        apr_thread_mutex_unlock(g->lock);
    }
}
